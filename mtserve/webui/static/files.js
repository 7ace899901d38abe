// mtserve WebUI, the Files tab: translate a whole document.
// Plain ES2020, no dependencies. Talks to the same-origin API:
//   GET /frontend/settings, GET /languages, POST /jobs (multipart),
//   GET /jobs/{id}/events (SSE progress), GET /jobs/{id}, DELETE /jobs/{id}.
'use strict';

(() => {
  const API_KEY_STORAGE = 'mtserve.apiKey';
  const POLL_MS = 1000;
  const $ = (id) => document.getElementById(id);
  const els = {
    tabText: $('tab-text'),
    tabFiles: $('tab-files'),
    textPanel: $('text-panel'),
    filesPanel: $('files-panel'),
    sourceLang: $('file-source-lang'),
    targetLang: $('file-target-lang'),
    drop: $('file-drop'),
    input: $('file-input'),
    formats: $('file-formats'),
    job: $('file-job'),
    name: $('file-name'),
    status: $('file-status'),
    progress: $('file-progress'),
    download: $('file-download'),
    cancel: $('file-cancel'),
    again: $('file-again'),
    notes: $('file-notes'),
    error: $('file-error'),
    apiKey: $('api-key'),
  };
  if (!els.filesPanel) return;

  const state = {
    formats: [],          // ['.txt', ...] from the server
    maxMb: 0,             // upload limit, 0 = unknown
    job: null,            // the job being shown
    events: null,         // its EventSource
    pollTimer: 0,
    started: 0,
  };
  const numberFormat = new Intl.NumberFormat();

  // ---------------------------------------------------------------- tabs

  function selectTab(name, { focus = false, remember = true } = {}) {
    const files = name === 'files';
    els.tabText.setAttribute('aria-selected', String(!files));
    els.tabFiles.setAttribute('aria-selected', String(files));
    els.tabText.tabIndex = files ? -1 : 0;
    els.tabFiles.tabIndex = files ? 0 : -1;
    els.textPanel.hidden = files;
    els.filesPanel.hidden = !files;
    document.body.dataset.tab = files ? 'files' : 'text';
    if (remember) {
      const url = `${location.pathname}${location.search}${files ? '#files' : ''}`;
      try { history.replaceState(history.state, '', url); } catch (_) { /* ignore */ }
    }
    if (focus) (files ? els.tabFiles : els.tabText).focus();
  }

  function onTabKey(e) {
    if (!['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(e.key)) return;
    e.preventDefault();
    const toFiles = e.key === 'End' || (e.key !== 'Home' && document.body.dataset.tab !== 'files');
    selectTab(toFiles ? 'files' : 'text', { focus: true });
  }

  // ------------------------------------------------------------- helpers

  function showError(message) {
    els.error.textContent = message;
    els.error.hidden = false;
  }

  function clearError() {
    els.error.textContent = '';
    els.error.hidden = true;
  }

  async function errorMessage(res) {
    let message = '';
    try {
      const body = await res.text();
      try {
        const data = JSON.parse(body);
        message = (data && (data.error || data.detail || data.message)) || '';
        if (typeof message !== 'string') message = JSON.stringify(message);
        if (message && typeof data.hint === 'string' && data.hint) message += ` — ${data.hint}`;
      } catch (_) {
        message = body.trim().slice(0, 300);
      }
    } catch (_) { /* unreadable */ }
    const code = `HTTP ${res.status}`;
    return message ? `${message} (${code})` : `The server answered ${code}.`;
  }

  function describeFailure(err) {
    if (err instanceof TypeError) {
      return 'Could not reach the translation server. Check that it is running and try again.';
    }
    return (err && err.message) || 'Something went wrong.';
  }

  function megabytes(bytes) {
    const mb = bytes / 1e6;
    return `${mb < 10 ? mb.toFixed(1) : numberFormat.format(Math.round(mb))} MB`;
  }

  function apiKey() {
    const typed = els.apiKey && els.apiKey.value.trim();
    if (typed) return typed;
    try { return localStorage.getItem(API_KEY_STORAGE) || ''; } catch (_) { return ''; }
  }

  // With keys required, every job route needs the key: a header where fetch can send one (the
  // server checks it before reading an upload), ?api_key= for EventSource and the download link.
  function keyHeaders(headers = {}) {
    const key = apiKey();
    return key ? { ...headers, Authorization: `Bearer ${key}` } : headers;
  }

  function withKey(url) {
    const key = apiKey();
    if (!key || !url) return url;
    return `${url}${url.includes('?') ? '&' : '?'}api_key=${encodeURIComponent(key)}`;
  }

  function option(value, text) {
    const o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    return o;
  }

  // --------------------------------------------------------------- job view

  function setStatus(text, kind = '') {
    els.status.textContent = text;
    els.status.dataset.kind = kind;
    els.job.dataset.state = kind;
  }

  function stopWatching() {
    if (state.events) state.events.close();
    state.events = null;
    clearTimeout(state.pollTimer);
    state.pollTimer = 0;
  }

  function resetJob() {
    stopWatching();
    state.job = null;
    els.job.hidden = true;
    els.download.hidden = true;
    els.download.removeAttribute('href');
    els.cancel.hidden = false;
    els.again.hidden = true;
    els.notes.replaceChildren();
    els.notes.hidden = true;
    els.progress.value = 0;
    els.progress.removeAttribute('aria-valuetext');
    els.drop.classList.remove('busy');
  }

  function render(job) {
    if (!state.job || job.id !== state.job.id) return;
    state.job = job;
    const total = Number(job.total) || 0;
    const done = Math.min(Number(job.done) || 0, total);
    els.progress.max = Math.max(total, 1);
    els.progress.value = job.status === 'done' ? els.progress.max : done;
    const pct = total ? Math.round((done / total) * 100) : 0;
    els.progress.setAttribute('aria-valuetext', `${pct}% (${done} of ${total} segments)`);
    const where = job.section ? ` · ${job.section}` : '';
    if (job.status === 'queued') {
      setStatus('Waiting for the engine…', 'busy');
    } else if (job.status === 'running') {
      setStatus(`Translating… ${numberFormat.format(done)} of ${numberFormat.format(total)} segments${where}`, 'busy');
    } else if (job.status === 'done') {
      const secs = (performance.now() - state.started) / 1000;
      setStatus(`Done: ${numberFormat.format(total)} segments in ${secs < 10 ? secs.toFixed(1) : Math.round(secs)} s`, 'done');
      els.download.href = job.translatedFileUrl;  // the URL is the permission: the key stays out of it
      els.download.download = job.resultFilename || '';
      els.download.textContent = `Download ${job.resultFilename || 'translation'}`;
      els.download.hidden = false;
      finish(job);
    } else if (job.status === 'failed') {
      setStatus('Failed', 'failed');
      showError(job.error || 'The translation failed.');
      finish(job);
    } else if (job.status === 'cancelled') {
      setStatus('Cancelled', 'cancelled');
      finish(job);
    }
  }

  function finish(job) {
    stopWatching();
    els.cancel.hidden = true;
    els.again.hidden = false;
    els.drop.classList.remove('busy');
    const notes = Array.isArray(job.notes) ? job.notes : [];
    els.notes.replaceChildren(...notes.map((n) => {
      const li = document.createElement('li');
      li.textContent = n;
      return li;
    }));
    els.notes.hidden = notes.length === 0 || job.status !== 'done';
  }

  async function poll(id) {
    try {
      const res = await fetch(`/jobs/${encodeURIComponent(id)}`, { headers: keyHeaders({ Accept: 'application/json' }) });
      if (!res.ok) throw new Error(await errorMessage(res));
      render(await res.json());
    } catch (err) {
      if (state.job && state.job.id === id) showError(describeFailure(err));
      return;
    }
    if (state.job && state.job.id === id && !['done', 'failed', 'cancelled'].includes(state.job.status)) {
      state.pollTimer = setTimeout(() => poll(id), POLL_MS);
    }
  }

  function watch(job) {
    if (typeof EventSource === 'undefined') { poll(job.id); return; }
    const source = new EventSource(withKey(`/jobs/${encodeURIComponent(job.id)}/events`));
    state.events = source;
    const onEvent = (e) => {
      try { render(JSON.parse(e.data)); } catch (_) { /* ignore a bad event */ }
    };
    for (const kind of ['progress', 'done', 'failed', 'cancelled']) source.addEventListener(kind, onEvent);
    source.onerror = () => {
      // The stream broke (or the server closed it): fall back to polling.
      if (state.events !== source) return;
      source.close();
      state.events = null;
      if (state.job && !['done', 'failed', 'cancelled'].includes(state.job.status)) poll(job.id);
    };
  }

  // ---------------------------------------------------------------- upload

  async function start(file) {
    if (!file) return;
    clearError();
    if (state.maxMb > 0 && file.size > state.maxMb * 1e6) {
      showError(`${file.name} is ${megabytes(file.size)}; this server accepts documents up to `
        + `${numberFormat.format(state.maxMb)} MB.`);
      return;
    }
    resetJob();
    state.job = { id: null };
    state.started = performance.now();
    els.job.hidden = false;
    els.name.textContent = file.name;
    els.drop.classList.add('busy');
    setStatus('Uploading…', 'busy');

    const form = new FormData();
    form.append('file', file, file.name);
    form.append('source', els.sourceLang.value || 'auto');
    form.append('target', els.targetLang.value || 'en');
    try {
      const res = await fetch('/jobs', { method: 'POST', body: form, headers: keyHeaders({ Accept: 'application/json' }) });
      if (!res.ok) throw new Error(await errorMessage(res));
      const job = await res.json();
      state.job = job;
      render(job);
      watch(job);
    } catch (err) {
      resetJob();
      showError(describeFailure(err));
    } finally {
      els.input.value = '';
    }
  }

  async function cancel() {
    const job = state.job;
    if (!job || !job.id) return;
    els.cancel.disabled = true;
    try {
      const res = await fetch(`/jobs/${encodeURIComponent(job.id)}`, { method: 'DELETE', headers: keyHeaders() });
      if (!res.ok) throw new Error(await errorMessage(res));
      render(await res.json());
    } catch (err) {
      showError(describeFailure(err));
    } finally {
      els.cancel.disabled = false;
    }
  }

  // ---------------------------------------------------------- drag and drop

  function onDragOver(e) {
    if (!e.dataTransfer || ![...e.dataTransfer.types].includes('Files')) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
    els.drop.classList.add('dragging');
  }

  function onDragLeave(e) {
    if (!els.filesPanel.contains(e.relatedTarget)) els.drop.classList.remove('dragging');
  }

  function onDrop(e) {
    e.preventDefault();
    els.drop.classList.remove('dragging');
    const files = e.dataTransfer && e.dataTransfer.files;
    if (!files || !files.length) return;
    if (files.length > 1) showError('Drop one document at a time; the first one is being translated.');
    start(files[0]);
  }

  // ------------------------------------------------------------------ start

  async function getJSON(url) {
    const res = await fetch(url, { headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(await errorMessage(res));
    return res.json();
  }

  async function init() {
    selectTab(location.hash === '#files' ? 'files' : 'text', { remember: false });
    const [settings, languages] = await Promise.allSettled([getJSON('/frontend/settings'), getJSON('/languages')]);
    let target = 'en';
    if (settings.status === 'fulfilled') {
      const s = settings.value || {};
      state.formats = Array.isArray(s.supportedFilesFormat) ? s.supportedFilesFormat : [];
      state.maxMb = Number(s.fileSizeLimitMb) || 0;
      if (s.language && s.language.target && s.language.target.code) target = s.language.target.code;
      if (s.filesTranslation === false) {
        els.tabFiles.hidden = true;
        if (document.body.dataset.tab === 'files') selectTab('text');
      }
    }
    const list = languages.status === 'fulfilled' && Array.isArray(languages.value) ? languages.value : [];
    const names = list.map((l) => [l.code, l.name || l.code]).sort((a, b) => a[1].localeCompare(b[1]));
    els.sourceLang.replaceChildren(option('auto', 'Detect language'), ...names.map(([c, n]) => option(c, n)));
    els.targetLang.replaceChildren(...names.map(([c, n]) => option(c, n)));
    if (names.some(([c]) => c === target)) els.targetLang.value = target;
    if (state.formats.length) {
      els.input.accept = state.formats.join(',');
      const shown = [...new Set(state.formats.map((f) => f.replace(/^\./, '')))];
      const limit = state.maxMb ? ` · up to ${numberFormat.format(state.maxMb)} MB` : '';
      els.formats.textContent = `${shown.join(', ')}${limit}`;
    }
    const problems = [settings, languages].filter((r) => r.status === 'rejected');
    if (problems.length) showError(`Could not load the server's settings: ${describeFailure(problems[0].reason)}`);
    els.filesPanel.dataset.ready = 'true';
  }

  els.tabText.addEventListener('click', () => selectTab('text'));
  els.tabFiles.addEventListener('click', () => selectTab('files'));
  els.tabText.addEventListener('keydown', onTabKey);
  els.tabFiles.addEventListener('keydown', onTabKey);
  els.drop.addEventListener('click', () => els.input.click());
  els.drop.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); els.input.click(); }
  });
  els.input.addEventListener('click', (e) => e.stopPropagation());
  els.input.addEventListener('change', () => start(els.input.files && els.input.files[0]));
  // The whole panel takes a drop (the zone is inside it), so a near miss still works.
  els.filesPanel.addEventListener('dragenter', onDragOver);
  els.filesPanel.addEventListener('dragover', onDragOver);
  els.filesPanel.addEventListener('drop', onDrop);
  els.filesPanel.addEventListener('dragleave', onDragLeave);
  els.cancel.addEventListener('click', cancel);
  els.again.addEventListener('click', () => { resetJob(); clearError(); els.drop.focus(); });
  window.addEventListener('hashchange', () => selectTab(location.hash === '#files' ? 'files' : 'text', { remember: false }));

  init().catch((err) => {
    els.filesPanel.dataset.ready = 'true';
    showError(`The Files tab failed to start: ${describeFailure(err)}`);
  });
})();
