// Two-rank expert parallelism (--world-size 2): the wire protocol, the head's link (a thread of its
// own owning the socket) and RemoteExperts, and the expert worker's server.
export { HeadLink, PeerUnavailableError, type HeadLinkOptions } from './head.js';
export { serveExperts, type ExpertRank, type ExpertRankOptions, type ExpertRankStats } from './rank-server.js';
export { modelIdentity } from './identity.js';
export { CONTROL_BYTES, readStatus } from './control.js';
export type { LinkEvent } from './link-thread.js';
export { PROTOCOL_VERSION, type ModelIdentity, type RowsDtype } from './protocol.js';
