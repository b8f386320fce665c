// The stats of an engine doing nothing, for scripted engines in tests.
import type { EngineStats } from '../../src/engine/types.js';

export const IDLE_ENGINE_STATS: EngineStats = {
  running: 0,
  waiting: 0,
  kvBlocksTotal: 0,
  kvBlocksUsed: 0,
  kvPoolTokens: 0,
  kvBlocksCached: 0,
  prefixQueriedTokens: 0,
  prefixHitTokens: 0,
  draftedTokens: 0,
  acceptedDraftTokens: 0,
  verifySteps: 0,
};
