// The "Model selection and I/O" group of the flag table, in help and README order.
import { flag } from './spec.js';
import { PORT, switchFlag, text } from './values.js';

/** `svc serve` with neither MODEL nor --model-from-path starts in NoModelLoaded (spec): the
 *  listener is up and a model is loaded through the Library (/admin/ API, dashboard). */
export const SERVE_WITHOUT_MODEL_BUILT = true;

export const MODEL_IO_FLAGS = [
  flag({
    name: 'MODEL',
    positional: true,
    key: 'model',
    group: 'Model selection and I/O',
    value: text('MODEL', 'model repository id'),
    default: undefined,
    defaultText: 'none',
    help: 'Model repository id (org/name), resolved against the local hub cache.',
    built: true,
  }),
  flag({
    name: 'model-from-path',
    key: 'modelFromPath',
    group: 'Model selection and I/O',
    value: text('path', 'path'),
    default: undefined,
    defaultText: 'none',
    help: 'Local model directory (Hugging Face layout) or .gguf file; skips repository resolution.',
    built: true,
  }),
  flag({
    name: 'demo',
    key: 'demo',
    group: 'Model selection and I/O',
    value: switchFlag(true),
    default: false,
    help: 'Load the demo model carried in the repository (stories260K, ~1 MB, MIT: it writes short stories), as the Library would.',
    built: true,
  }),
  flag({
    name: 'model-name',
    aliases: ['served-model-name'],
    key: 'modelName',
    group: 'Model selection and I/O',
    value: text('name', 'name'),
    default: undefined,
    defaultText: "the model config's `_name_or_path`, else MODEL",
    help: 'Name reported by GET /v1/models.',
    built: true,
  }),
  flag({
    name: 'cache-dir',
    key: 'cacheDir',
    group: 'Model selection and I/O',
    value: text('dir', 'directory'),
    default: undefined,
    defaultText: '`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`',
    help: 'Root of the local hub cache that MODEL is resolved against.',
    built: true,
  }),
  flag({
    name: 'port',
    key: 'port',
    group: 'Model selection and I/O',
    value: PORT,
    default: 8888,
    help: 'HTTP listen port.',
    built: true,
  }),
  flag({
    name: 'bind',
    key: 'bind',
    group: 'Model selection and I/O',
    value: text('addr', 'address'),
    default: '127.0.0.1',
    help: 'Listen address; 127.0.0.1 is loopback only, 0.0.0.0 exposes the server on every interface.',
    built: true,
  }),
  flag({
    name: 'no-fast-load',
    key: 'fastLoad',
    group: 'Model selection and I/O',
    value: switchFlag(false),
    default: true,
    defaultText: 'off (fast loader on)',
    help:
      'Plain memory-mapped loading. By default GGUF weights are packed tensor by tensor from the mapped file and each ' +
      "packed tensor's file pages are released at once (peak RSS about the file size), and weights used in place are " +
      'paged in during start-up; with this flag pages stay mapped as first touched (packed weights hold their file pages ' +
      'too until the kernel reclaims them) and in-place weights are paged in on first use. Safetensors: the default ' +
      'reads the files into memory, this flag maps them.',
    built: true,
  }),
  flag({
    name: 'no-packed-cache',
    key: 'packedCache',
    group: 'Model selection and I/O',
    value: switchFlag(false),
    default: true,
    defaultText: 'off (packed-weights cache on)',
    help:
      'Do not use the packed-weights cache. By default, once a GGUF model has been repacked for the kernels and the ' +
      'server is serving, the packed weights are written in the background to a cache file (keyed by the GGUF file, its ' +
      'size and modification time, and the packing format); a later load maps that file instead of repacking: no repacking ' +
      'CPU, no fresh memory to fault in, RSS about the packed size. A cache file that is missing, truncated, stale or of ' +
      'another format is ignored (with a log line) and rewritten. Has no effect with --no-fast-load.',
    built: true,
  }),
  flag({
    name: 'packed-cache-dir',
    key: 'packedCacheDir',
    group: 'Model selection and I/O',
    value: text('dir', 'directory'),
    default: undefined,
    defaultText: '`$XDG_CACHE_HOME/svc/packed`, else `~/.cache/svc/packed`',
    help: 'Directory of the packed-weights cache files (one per GGUF file). Unwritable: the server logs it and serves on.',
    built: true,
  }),
] as const;
