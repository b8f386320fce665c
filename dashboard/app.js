// The svc dashboard: plain DOM, no framework, no build step. Polls GET /admin/state and
// /admin/stats every second (Main view), lists GET /admin/library and loads with POST /admin/load
// (Library view), and streams POST /v1/chat/completions (Chat view). Every API call sends
// `Authorization: Bearer <key>` when a key was entered (kept in sessionStorage). Server text is
// only ever set as textContent.

const KEY_STORE = 'svc-api-key';
const $ = (id) => document.getElementById(id);

let apiKey = sessionStorage.getItem(KEY_STORE) ?? '';
let lastState = null;
/** The model this page asked to load, until it is Ready (then the page returns to the Main view). */
let pendingLoad = null;

// ---------------------------------------------------------------------------------------------
// API

function headers(json) {
  const h = {};
  if (json) h['content-type'] = 'application/json';
  if (apiKey !== '') h.authorization = `Bearer ${apiKey}`;
  return h;
}

/** The error body's message (OpenAI / Anthropic shape), else the status line. */
function errorText(status, body) {
  const e = body && typeof body === 'object' ? body.error : null;
  if (e && typeof e === 'object' && typeof e.message === 'string') return e.code ? `${e.message} (${e.code})` : e.message;
  return `HTTP ${status}`;
}

/** GET or POST JSON; resolves to {ok, status, body}; a 401 shows the key prompt. */
async function api(path, body) {
  const init = body === undefined ? { headers: headers(false) } : { method: 'POST', headers: headers(true), body: JSON.stringify(body) };
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    return { ok: false, status: 0, body: { error: { message: `Cannot reach the server: ${err.message}` } } };
  }
  const parsed = await res.json().catch(() => null);
  showAuthNeeded(res.status === 401, parsed);
  return { ok: res.ok, status: res.status, body: parsed };
}

function showAuthNeeded(needed, body) {
  const el = $('auth-message');
  el.hidden = !needed;
  if (needed) el.textContent = `This server needs an API key: enter it above. (${errorText(401, body)})`;
}

// ---------------------------------------------------------------------------------------------
// Views and key

function showView(name) {
  for (const tab of document.querySelectorAll('.tab')) tab.setAttribute('aria-pressed', String(tab.dataset.view === name));
  for (const view of ['main', 'library', 'chat']) $(`view-${view}`).hidden = view !== name;
  if (name === 'library') void refreshLibrary();
}

for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => showView(tab.dataset.view));

$('api-key').value = apiKey;
$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  apiKey = $('api-key').value.trim();
  if (apiKey === '') sessionStorage.removeItem(KEY_STORE);
  else sessionStorage.setItem(KEY_STORE, apiKey);
  void poll();
  if (!$('view-library').hidden) void refreshLibrary();
});
$('forget-key').addEventListener('click', () => {
  apiKey = '';
  $('api-key').value = '';
  sessionStorage.removeItem(KEY_STORE);
});

// ---------------------------------------------------------------------------------------------
// Main view: state and stats, every second

function formatUptime(sec) {
  const s = Math.floor(sec);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h ${m}m ${s % 60}s` : m > 0 ? `${m}m ${s % 60}s` : `${s % 60}s`;
}

function renderState(st) {
  lastState = st;
  $('state-badge').textContent = st.state;
  $('state-badge').dataset.state = st.state;
  $('stat-state').textContent = st.state;
  $('stat-model').textContent = st.model ? `${st.model.id} (${st.model.path})` : '—';
  $('header-model').textContent = st.model ? st.model.id : '';
  $('stat-recipe').textContent = st.model?.recipe ?? '—';
  $('stat-uptime').textContent = formatUptime(st.uptimeSec ?? 0);

  const loading = st.state === 'loading' && st.loading;
  $('loading').hidden = !loading;
  if (loading) {
    const { id, tensors, totalTensors } = st.loading;
    $('load-progress').max = Math.max(1, totalTensors);
    $('load-progress').value = tensors;
    $('load-label').textContent = `Loading ${id}: ${tensors} / ${totalTensors} tensors`;
  }
  if (st.lastError) showLibraryError(st.lastError);
  // A load asked for here that succeeded returns to the Main view; a refused or failed one stays
  // in the Library, where its reason is shown.
  if (pendingLoad !== null && st.state === 'ready' && st.model?.id === pendingLoad) {
    showView('main');
    pendingLoad = null;
  } else if (pendingLoad !== null && st.state !== 'loading' && (st.lastError || st.state === 'no_model')) {
    pendingLoad = null;
  }
}

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = String(text);
  row.append(td);
  return td;
}

function renderStats(s) {
  $('stat-running').textContent = String(s.running);
  $('stat-waiting').textContent = String(s.waiting);
  $('stat-tps').textContent = s.tokensPerSec.toFixed(1);
  $('stat-kv-meter').value = s.kvUtilization;
  $('stat-kv').textContent = `${(s.kvUtilization * 100).toFixed(1)} %`;
  $('stat-requests').textContent = String(s.requestsTotal);
  const rows = s.recent.map((r) => {
    const tr = document.createElement('tr');
    cell(tr, new Date(r.time).toLocaleTimeString());
    cell(tr, r.route);
    cell(tr, r.status);
    cell(tr, Math.round(r.ms));
    cell(tr, r.tokens ?? '');
    return tr;
  });
  $('recent').replaceChildren(...rows);
}

async function poll() {
  const [state, stats] = await Promise.all([api('/admin/state'), api('/admin/stats')]);
  if (state.ok) renderState(state.body);
  if (stats.ok) renderStats(stats.body);
}

// ---------------------------------------------------------------------------------------------
// Library view

function showLibraryError(text) {
  const el = $('library-error');
  el.hidden = text === null;
  el.textContent = text ?? '';
}

function formatSize(bytes) {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e3).toFixed(1)} kB`;
}

async function load(model, recipe) {
  showLibraryError(null);
  const r = await api('/admin/load', recipe === undefined ? { model } : { model, recipe });
  if (!r.ok) showLibraryError(`Load of ${model} refused: ${errorText(r.status, r.body)}`);
  else pendingLoad = model;
  await poll();
}

function renderLibrary(models) {
  const rows = models.map((m) => {
    const tr = document.createElement('tr');
    cell(tr, m.id).title = m.path;
    cell(tr, m.source);
    cell(tr, m.architecture ?? '?');
    cell(tr, formatSize(m.sizeBytes));
    cell(tr, m.runnable ? 'yes' : `no: ${m.reason ?? ''}`);
    const td = cell(tr, '');
    for (const recipe of m.recipes.length > 0 ? m.recipes : [{ name: undefined }]) {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = recipe.name === undefined ? 'Load' : `Load (${recipe.name})`;
      button.setAttribute('aria-label', `Load ${m.id}${recipe.name === undefined ? '' : ` with recipe ${recipe.name}`}`);
      if (recipe.flags) button.title = JSON.stringify(recipe.flags);
      button.addEventListener('click', () => void load(m.id, recipe.name));
      td.append(button, ' ');
    }
    return tr;
  });
  $('library').replaceChildren(...rows);
}

async function refreshLibrary() {
  const r = await api('/admin/library');
  if (r.ok) renderLibrary(r.body.models);
  else if (r.status !== 401) showLibraryError(`Cannot list the library: ${errorText(r.status, r.body)}`);
}

$('add-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  showLibraryError(null);
  const r = await api('/admin/library', { path: $('add-path').value.trim() });
  if (!r.ok) showLibraryError(`Cannot add it: ${errorText(r.status, r.body)}`);
  else $('add-path').value = '';
  await refreshLibrary();
});

// ---------------------------------------------------------------------------------------------
// Chat view: streamed chat completions

let history = [];
let abort = null;

function chatEntry(role) {
  const li = document.createElement('li');
  li.className = role;
  const label = document.createElement('span');
  label.className = 'role';
  label.textContent = role === 'user' ? 'You' : 'Assistant';
  li.append(label);
  $('chat-log').append(li);
  return li;
}

function addPart(li, tag, className, text = '') {
  const el = document.createElement(tag);
  el.className = className;
  el.textContent = text;
  li.append(el);
  return el;
}

/** The data payloads of an SSE stream, one at a time. */
async function* sseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data !== '') yield data;
    }
  }
}

async function sendChat(text) {
  history.push({ role: 'user', content: text });
  addPart(chatEntry('user'), 'p', 'answer', text);
  const li = chatEntry('assistant');
  const parts = { reasoning: null, answer: null, calls: [] };
  let content = '';
  let reasoning = '';
  const calls = [];
  const request = { model: lastState?.model?.id ?? 'default', messages: history, stream: true };
  const toolsText = $('chat-tools').value.trim();
  if (toolsText !== '') {
    try {
      request.tools = JSON.parse(toolsText);
    } catch (err) {
      addPart(li, 'p', 'error', `The tools are not JSON: ${err.message}`);
      history.pop();
      return;
    }
  }
  abort = new AbortController();
  $('chat-send').disabled = true;
  $('chat-stop').disabled = false;
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: headers(true),
      body: JSON.stringify(request),
      signal: abort.signal,
    });
    if (!res.ok) {
      const body = await res.json().catch(() => null);
      showAuthNeeded(res.status === 401, body);
      const notLoaded = res.status === 503 && body?.error?.code === 'model_not_loaded';
      const prefix = notLoaded ? 'No model is loaded: load one in the Library. ' : '';
      addPart(li, 'p', 'error', `${prefix}${errorText(res.status, body)}`);
      history.pop();
      return;
    }
    for await (const data of sseData(res.body)) {
      if (data === '[DONE]') break;
      const chunk = JSON.parse(data);
      if (chunk.error) {
        addPart(li, 'p', 'error', errorText(500, chunk));
        break;
      }
      const delta = chunk.choices?.[0]?.delta ?? {};
      // svc streams `reasoning`; vLLM and others `reasoning_content`.
      const thought = delta.reasoning ?? delta.reasoning_content;
      if (thought) {
        if (parts.reasoning === null) {
          const details = document.createElement('details');
          details.className = 'reasoning';
          details.open = true;
          const summary = document.createElement('summary');
          summary.textContent = 'Reasoning';
          details.append(summary);
          li.insertBefore(details, li.children[1] ?? null);
          parts.reasoning = addPart(details, 'p', 'reasoning-text');
        }
        reasoning += thought;
        parts.reasoning.textContent = reasoning;
      }
      if (delta.content) {
        parts.answer ??= addPart(li, 'p', 'answer');
        content += delta.content;
        parts.answer.textContent = content;
      }
      for (const tc of delta.tool_calls ?? []) {
        const call = (calls[tc.index] ??= { id: tc.id, type: 'function', function: { name: '', arguments: '' } });
        if (tc.id) call.id = tc.id;
        call.function.name += tc.function?.name ?? '';
        call.function.arguments += tc.function?.arguments ?? '';
        parts.calls[tc.index] ??= addPart(li, 'pre', 'tool-call');
        parts.calls[tc.index].textContent = `Tool call: ${call.function.name}(${call.function.arguments})`;
      }
    }
    if (parts.reasoning !== null) parts.reasoning.parentElement.open = false;
    const message = { role: 'assistant', content };
    if (calls.length > 0) message.tool_calls = calls.filter(Boolean);
    history.push(message);
  } catch (err) {
    addPart(li, 'p', 'error', err.name === 'AbortError' ? 'Stopped.' : `Failed: ${err.message}`);
    if (content !== '') history.push({ role: 'assistant', content });
  } finally {
    abort = null;
    $('chat-send').disabled = false;
    $('chat-stop').disabled = true;
  }
}

$('chat-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('chat-input').value.trim();
  if (text === '' || abort !== null) return;
  $('chat-input').value = '';
  void sendChat(text);
});
$('chat-stop').addEventListener('click', () => abort?.abort());
$('chat-clear').addEventListener('click', () => {
  history = [];
  $('chat-log').replaceChildren();
});

// ---------------------------------------------------------------------------------------------

void poll();
setInterval(() => void poll(), 1000);
