// A prompt worker thread (see prompt-workers.ts): rebuilds the model's tokenizer from its packed
// definition, holds the chat template, and renders and encodes prompts on request.
import { parentPort, workerData } from 'node:worker_threads';
import { ApiError } from '../common/api-error.js';
import { releaseHeapMemory } from '../kernels/release-heap.js';
import { tokenizerFromPacked } from '../model/tokenizer.js';
import { chatPromptFromText, encodeTextPrompt, renderChatText, type PromptModel } from './prompt.js';
import type { PromptTask, PromptReply, PromptWorkerData } from './prompt-workers.js';
import { tokenizeHere } from './tokenize.js';

const data = workerData as PromptWorkerData;
const tokenizer = tokenizerFromPacked(data.tokenizer);

function run(task: PromptTask): PromptReply {
  const model: PromptModel = { tokenizer, chatTemplate: data.chatTemplate, maxSeqLen: task.maxSeqLen };
  let chars = 0;
  try {
    if (task.kind === 'chat') {
      const text = renderChatText(model, task.input);
      chars = text.length;
      const prompt = chatPromptFromText(model, text);
      return { id: task.id, ok: true, tokens: Uint32Array.from(prompt.tokens), text: prompt.text, chars };
    }
    if (task.kind === 'tokenize') {
      // Counted first: a long text that is refused still gets its worker recycled.
      if ('text' in task.input.source) chars = task.input.source.text.length;
      const { tokens, chars: n } = tokenizeHere(model, task.input);
      return { id: task.id, ok: true, tokens: Uint32Array.from(tokens), text: null, chars: n };
    }
    if (task.kind === 'detokenize') {
      const text = model.tokenizer.decode(task.ids);
      return { id: task.id, ok: true, tokens: new Uint32Array(0), text, chars: text.length };
    }
    chars = task.text.length;
    return { id: task.id, ok: true, tokens: Uint32Array.from(encodeTextPrompt(model, task.text, task.param)), text: null, chars };
  } catch (err) {
    // ApiErrors cross as their fields and come back as the same ApiError; anything else as a message (a 500).
    const e = err as Error;
    const api = err instanceof ApiError ? { status: err.status, code: err.code, param: err.param } : null;
    return { id: task.id, ok: false, message: e?.message ?? String(err), api, chars };
  }
}

// The tokenizer is built: its build's garbage goes back to the OS, and the pool may count this worker ready.
releaseHeapMemory();
parentPort!.postMessage({ ready: true });

parentPort!.on('message', (task: PromptTask) => {
  const reply = run(task);
  parentPort!.postMessage(reply, reply.ok ? [reply.tokens.buffer as ArrayBuffer] : []);
});
