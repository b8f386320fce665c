// Where tests find the repository and the shared model files (../shared beside the checkout).
import { fileURLToPath } from 'node:url';
import { resolve, dirname } from 'node:path';

// Compiled tests live in dist/test/helpers/; the repository root is three levels up.
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const SHARED = resolve(REPO_ROOT, '..', 'shared');
export const MODELS = resolve(SHARED, 'models');
export const FIXTURES = resolve(MODELS, 'tiny-hf-fixtures');
export const REFERENCE = resolve(SHARED, 'reference');
export const TINY_CHAT = resolve(MODELS, 'svc-tiny-chat');
