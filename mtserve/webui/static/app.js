// mtserve WebUI: plain ES2020, no dependencies, works offline.
// Talks to the same-origin LibreTranslate-compatible API:
//   GET /languages, GET /frontend/settings, POST /translate/stream (SSE), POST /translate.
'use strict';

(() => {
  const TRANSLATE_DEBOUNCE_MS = 400;  // until /frontend/settings gives frontendTimeout
  const URL_DEBOUNCE_MS = 300;
  const COPIED_FEEDBACK_MS = 1500;
  const RTL_LANGS = new Set(['ar', 'he', 'fa', 'ur', 'ps', 'yi', 'dv', 'ug', 'ckb', 'sd']);
  const API_KEY_STORAGE = 'mtserve.apiKey';

  const $ = (id) => document.getElementById(id);
  const els = {
    sourceText: $('source-text'),
    targetText: $('target-text'),
    sourceLang: $('source-lang'),
    targetLang: $('target-lang'),
    swap: $('swap'),
    copy: $('copy'),
    copyLabel: document.querySelector('#copy .copy-label'),
    clear: $('clear'),
    charCount: $('char-count'),
    error: $('error'),
    detected: $('detected'),
    status: $('status'),
    model: $('model'),
    targetPane: $('target-pane'),
    hint: $('shortcut-hint'),
    apiKeyRow: $('api-key-row'),
    apiKey: $('api-key'),
    context: $('context-text'),
    announcer: $('announcer'),
  };

  const numberFormat = new Intl.NumberFormat();

  const state = {
    ready: false,
    names: new Map(),            // code -> display name
    targetsBySource: new Map(),  // code -> [target codes]
    allCodes: [],                // every code, sorted by name
    charLimit: -1,
    keyRequired: false,
    debounceMs: TRANSLATE_DEBOUNCE_MS,  // LibreTranslate's frontendTimeout
    defaults: { source: 'auto', target: 'en' },
    detected: null,              // { code, confidence } for the current auto text
    controller: null,            // AbortController of the in-flight request
    seq: 0,                      // bumps on each request; stale responses are ignored
    lastKey: null,               // request key of the translation now shown
    errorKind: null,             // 'limit' | 'request' | 'load' | null
  };

  let translateTimer = 0;
  let urlTimer = 0;
  let copyTimer = 0;

  // ---------------------------------------------------------------- helpers

  const charCount = (s) => {
    // Count code points like the server (Python len), not UTF-16 units.
    let n = 0;
    for (const _ of s) n += 1; // eslint-disable-line no-unused-vars
    return n;
  };

  const hasLimit = () => Number.isFinite(state.charLimit) && state.charLimit > 0;

  const langName = (code) => state.names.get(code) || code;

  function announce(text) {
    els.announcer.textContent = '';
    // A fresh text node after a tick makes screen readers repeat identical messages.
    setTimeout(() => { els.announcer.textContent = text; }, 30);
  }

  function setStatus(text, busy = false) {
    els.status.textContent = text;
    els.status.classList.toggle('busy', busy);
    els.targetPane.classList.toggle('busy', busy);
    els.targetText.setAttribute('aria-busy', busy ? 'true' : 'false');
  }

  function showError(message, kind = 'request') {
    state.errorKind = kind;
    els.error.textContent = message;
    els.error.hidden = false;
  }

  function clearError(kind = null) {
    if (kind && state.errorKind !== kind) return;
    state.errorKind = null;
    els.error.textContent = '';
    els.error.hidden = true;
  }

  function setOutput(text) {
    els.targetText.textContent = text;
    els.targetText.classList.remove('stale');
    updateCopyState();
  }

  function updateCopyState() {
    els.copy.disabled = els.targetText.textContent.length === 0;
  }

  function updateDirections() {
    const s = els.sourceLang.value;
    const t = els.targetLang.value;
    if (s && s !== 'auto') els.sourceText.setAttribute('lang', s);
    else els.sourceText.removeAttribute('lang');
    if (t) els.targetText.setAttribute('lang', t);
    els.targetText.setAttribute('dir', RTL_LANGS.has(t) ? 'rtl' : 'ltr');
  }

  function setDetected(info) {
    if (!info || typeof info.language !== 'string' || !info.language) return;
    const confidence = Number(info.confidence);
    state.detected = { code: info.language, confidence };
    const pct = Number.isFinite(confidence) ? ` (${Math.round(confidence)}%)` : '';
    const prefix = document.createElement('span');
    prefix.className = 'detected-prefix';
    prefix.textContent = 'Detected: ';
    els.detected.replaceChildren(prefix, `${langName(info.language)}${pct}`);
    els.detected.title = `Detected language: ${langName(info.language)}${pct}`;
    els.detected.hidden = els.sourceLang.value !== 'auto';
    updateSwapState();
  }

  function clearDetected() {
    state.detected = null;
    els.detected.textContent = '';
    els.detected.hidden = true;
    updateSwapState();
  }

  function updateSwapState() {
    const blocked = els.sourceLang.value === 'auto' && !state.detected;
    els.swap.disabled = blocked;
    els.swap.title = blocked
      ? 'Swap needs a known source language (type some text first)'
      : 'Swap languages and text';
  }

  function updateCounter() {
    const n = charCount(els.sourceText.value);
    const over = hasLimit() && n > state.charLimit;
    const near = hasLimit() && !over && n > state.charLimit * 0.9;
    els.charCount.textContent = hasLimit()
      ? `${numberFormat.format(n)} / ${numberFormat.format(state.charLimit)}`
      : `${numberFormat.format(n)} ${n === 1 ? 'character' : 'characters'}`;
    els.charCount.classList.toggle('over', over);
    els.charCount.classList.toggle('near', near);
    els.sourceText.setAttribute('aria-invalid', over ? 'true' : 'false');
    els.clear.hidden = els.sourceText.value.length === 0;
    return { n, over };
  }

  // ------------------------------------------------------------ URL state

  function syncUrlNow() {
    clearTimeout(urlTimer);
    const params = new URLSearchParams(location.search);
    params.set('source', els.sourceLang.value);
    params.set('target', els.targetLang.value);
    const q = els.sourceText.value;
    if (q) params.set('q', q); else params.delete('q');
    const context = els.context.value.trim();
    if (context) params.set('context', context); else params.delete('context');
    const qs = params.toString();
    const url = `${location.pathname}${qs ? `?${qs}` : ''}${location.hash}`;
    try {
      history.replaceState(history.state, '', url);
    } catch (_) {
      // Very long texts can exceed URL limits; the page still works.
    }
  }

  function syncUrlSoon() {
    clearTimeout(urlTimer);
    urlTimer = setTimeout(syncUrlNow, URL_DEBOUNCE_MS);
  }

  // ------------------------------------------------------- language lists

  function option(value, text) {
    const o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    return o;
  }

  function fillSourceSelect() {
    const sel = els.sourceLang;
    sel.replaceChildren(option('auto', 'Detect language'));
    for (const code of state.allCodes) sel.append(option(code, langName(code)));
  }

  function targetCodesFor(source) {
    if (source === 'auto' || !state.targetsBySource.has(source)) return state.allCodes;
    const targets = state.targetsBySource.get(source);
    return targets.length ? targets : state.allCodes;
  }

  // Repopulates the target list for the chosen source, keeping a valid choice.
  function fillTargetSelect(preferred) {
    const sel = els.targetLang;
    const source = els.sourceLang.value;
    const wanted = preferred || sel.value;
    const codes = targetCodesFor(source)
      .slice()
      .sort((a, b) => langName(a).localeCompare(langName(b)));
    sel.replaceChildren(...codes.map((c) => option(c, langName(c))));
    const pick = [wanted, state.defaults.target, 'en']
      .find((c) => c && codes.includes(c) && c !== source)
      || codes.find((c) => c !== source)
      || codes[0];
    if (pick) sel.value = pick;
  }

  function hasSourceOption(code) {
    return code === 'auto' || state.names.has(code);
  }

  // ----------------------------------------------------------- networking

  class ApiError extends Error {}

  async function errorFromResponse(res) {
    let message = '';
    try {
      const body = await res.text();
      try {
        const data = JSON.parse(body);
        let detail = data && (data.error ?? data.detail ?? data.message);
        if (Array.isArray(detail)) {
          detail = detail.map((d) => (d && d.msg) || JSON.stringify(d)).join('; ');
        } else if (detail && typeof detail !== 'string') {
          detail = JSON.stringify(detail);
        }
        message = detail || '';
        // LibreTranslate's words in error, mtserve's advice on what to do in hint.
        if (message && typeof data.hint === 'string' && data.hint) message += ` — ${data.hint}`;
      } catch (_) {
        message = body.trim().slice(0, 300);
      }
    } catch (_) { /* body unreadable */ }
    const code = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
    return new ApiError(message ? `${message} (${code})` : `The server answered ${code}.`);
  }

  function describeError(err) {
    if (err instanceof ApiError) return err.message;
    if (err instanceof TypeError) {
      return 'Could not reach the translation server. Check that it is running and try again.';
    }
    return (err && err.message) || 'Something went wrong.';
  }

  async function getJSON(url) {
    const res = await fetch(url, { headers: { Accept: 'application/json' } });
    if (!res.ok) throw await errorFromResponse(res);
    return res.json();
  }

  // Parses a text/event-stream body. Yields { event, data } per event.
  async function* readEventStream(body) {
    const reader = body.getReader();
    const decoder = new TextDecoder('utf-8');
    let buffer = '';
    let pendingCR = false;
    let finished = false;

    const parseBlock = (block) => {
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (!line || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (!data.length && event === 'message') return null;
      return { event, data: data.join('\n') };
    };

    const feed = (text) => {
      if (pendingCR) { text = `\r${text}`; pendingCR = false; }
      // A CR at a chunk edge may be half of CRLF: wait for the next chunk.
      if (text.endsWith('\r')) { pendingCR = true; text = text.slice(0, -1); }
      buffer += text.replace(/\r\n?/g, '\n');
    };

    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        feed(decoder.decode(value, { stream: true }));
        let idx;
        while ((idx = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, idx);
          buffer = buffer.slice(idx + 2);
          const ev = parseBlock(block);
          if (ev) yield ev;
        }
      }
      feed(decoder.decode());
      if (pendingCR) buffer += '\n';
      finished = true;
      if (buffer.trim()) {
        const ev = parseBlock(buffer);
        buffer = '';
        if (ev) yield ev;
      }
    } finally {
      if (!finished) reader.cancel().catch(() => {});
      else reader.releaseLock();
    }
  }

  function requestBody(q, source, target) {
    const body = { q, source, target, format: 'text' };
    const key = els.apiKey.value.trim();
    if (key) body.api_key = key;
    const context = els.context.value.trim();
    if (context) body.context = context; // DeepL's field: informs the translation, is not translated
    return JSON.stringify(body);
  }

  function abortInFlight() {
    if (state.controller) state.controller.abort();
    state.controller = null;
    state.seq += 1; // anything still running is now stale
  }

  // ---------------------------------------------------------- translation

  function resetOutput() {
    abortInFlight();
    clearTimeout(translateTimer);
    setOutput('');
    clearDetected();
    state.lastKey = null;
    setStatus('');
    if (state.errorKind !== 'load') clearError();
  }

  async function translate({ force = false } = {}) {
    clearTimeout(translateTimer);
    if (!state.ready) return;

    const q = els.sourceText.value;
    const source = els.sourceLang.value;
    const target = els.targetLang.value;

    if (!q.trim()) { resetOutput(); return; }

    const { n, over } = updateCounter();
    if (over) {
      abortInFlight();
      els.targetText.classList.add('stale');
      setStatus('');
      const extra = n - state.charLimit;
      showError(
        `The text is ${numberFormat.format(extra)} ${extra === 1 ? 'character' : 'characters'} `
        + `over this server's limit of ${numberFormat.format(state.charLimit)}. `
        + 'Shorten it to translate.',
        'limit',
      );
      return;
    }
    clearError('limit');

    const key = JSON.stringify([q, source, target, els.apiKey.value.trim(), els.context.value.trim()]);
    if (!force && key === state.lastKey) {
      els.targetText.classList.remove('stale');
      return;
    }

    abortInFlight();
    const controller = new AbortController();
    state.controller = controller;
    const seq = state.seq;
    const current = () => seq === state.seq;
    const started = performance.now();

    let built = '';
    let sawDelta = false;

    const finish = (data) => {
      setOutput(typeof data.translatedText === 'string' ? data.translatedText : built);
      if (data.detectedLanguage) setDetected(data.detectedLanguage);
      state.lastKey = key;
      clearError();
      const secs = (performance.now() - started) / 1000;
      const stored = data.translationMemory ? data.translationMemory.segments : 0;
      const memory = stored
        ? ` · ${stored === 1 ? 'one segment' : `${numberFormat.format(stored)} segments`} from the translation memory`
        : '';
      setStatus(`Translated in ${secs < 10 ? secs.toFixed(1) : Math.round(secs)} s${memory}`);
    };

    els.targetText.classList.add('stale');
    setStatus('Translating…', true);

    const init = {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: requestBody(q, source, target),
      signal: controller.signal,
    };

    try {
      let res = await fetch('/translate/stream', init);
      if (res.status === 404 || res.status === 405) {
        // No streaming endpoint on this server: use the plain one.
        res = await fetch('/translate', {
          ...init, headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        });
      }
      if (!res.ok) throw await errorFromResponse(res);

      const type = res.headers.get('content-type') || '';
      if (!type.includes('text/event-stream') || !res.body) {
        const data = await res.json();
        if (current()) finish(data);
        return;
      }

      let done = false;
      for await (const ev of readEventStream(res.body)) {
        if (!current()) return;
        let data = {};
        if (ev.data) {
          try { data = JSON.parse(ev.data); } catch (_) { continue; }
        }
        if (ev.event === 'detected') {
          setDetected(data);
        } else if (ev.event === 'delta') {
          if (!sawDelta) { sawDelta = true; built = ''; }
          built += typeof data.text === 'string' ? data.text : '';
          els.targetText.textContent = built;
          els.targetText.classList.remove('stale');
          updateCopyState();
        } else if (ev.event === 'done') {
          finish(data);
          done = true;
          break;
        } else if (ev.event === 'error') {
          throw new ApiError(data.error || 'The translation failed.');
        }
      }
      if (!done && current()) {
        throw new ApiError('The connection closed before the translation finished.');
      }
    } catch (err) {
      if (!current() || (err && err.name === 'AbortError')) return;
      setOutput('');
      state.lastKey = null;
      setStatus('');
      showError(describeError(err));
    } finally {
      if (current()) {
        state.controller = null;
        if (els.status.classList.contains('busy')) setStatus('');
      }
    }
  }

  function scheduleTranslate() {
    clearTimeout(translateTimer);
    translateTimer = setTimeout(() => translate(), state.debounceMs);
  }

  // ------------------------------------------------------------- actions

  function onInput() {
    const { over } = updateCounter();
    syncUrlSoon();
    if (!els.sourceText.value.trim()) { resetOutput(); return; }
    if (!over) clearError('limit');
    if (els.targetText.textContent) els.targetText.classList.add('stale');
    scheduleTranslate();
  }

  function onSourceLangChange() {
    if (els.sourceLang.value !== 'auto') clearDetected();
    else updateSwapState();
    fillTargetSelect();
    updateDirections();
    syncUrlNow();
    translate();
  }

  function onTargetLangChange() {
    updateDirections();
    syncUrlNow();
    translate();
  }

  function swap() {
    let source = els.sourceLang.value;
    const target = els.targetLang.value;
    if (source === 'auto') {
      if (!state.detected) return; // never swap "auto" into the target
      source = state.detected.code;
    }
    const oldSourceText = els.sourceText.value;
    const translation = els.targetText.textContent;

    abortInFlight();
    clearTimeout(translateTimer);

    els.sourceLang.value = hasSourceOption(target) ? target : 'auto';
    fillTargetSelect(source);
    if (els.sourceLang.value !== 'auto') clearDetected();

    if (translation) {
      els.sourceText.value = translation;
      // Show the old text meanwhile; the new translation will replace it.
      els.targetText.textContent = oldSourceText;
      els.targetText.classList.add('stale');
      updateCopyState();
    }
    state.lastKey = null;
    updateCounter();
    updateDirections();
    updateSwapState();
    syncUrlNow();
    translate({ force: true });
    els.sourceText.focus();
  }

  function legacyCopy(text) {
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.top = '-1000px';
    ta.style.opacity = '0';
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
    ta.remove();
    els.copy.focus();
    return ok;
  }

  async function copyTranslation() {
    const text = els.targetText.textContent;
    if (!text) return;
    let ok = false;
    if (navigator.clipboard && window.isSecureContext) {
      try { await navigator.clipboard.writeText(text); ok = true; } catch (_) { ok = false; }
    }
    if (!ok) ok = legacyCopy(text);
    clearTimeout(copyTimer);
    els.copy.classList.toggle('copied', ok);
    els.copyLabel.textContent = ok ? 'Copied' : 'Copy failed';
    announce(ok ? 'Translation copied to the clipboard' : 'Could not copy the translation');
    copyTimer = setTimeout(() => {
      els.copy.classList.remove('copied');
      els.copyLabel.textContent = 'Copy';
    }, COPIED_FEEDBACK_MS);
  }

  function clearSource() {
    els.sourceText.value = '';
    updateCounter();
    resetOutput();
    syncUrlNow();
    els.sourceText.focus();
  }

  // ---------------------------------------------------------------- start

  function applyLanguages(list) {
    state.names.clear();
    state.targetsBySource.clear();
    for (const lang of list) {
      if (!lang || typeof lang.code !== 'string') continue;
      state.names.set(lang.code, lang.name || lang.code);
      state.targetsBySource.set(lang.code, Array.isArray(lang.targets) ? lang.targets : []);
    }
    // Targets may mention codes that are not sources; they still need names.
    for (const targets of state.targetsBySource.values()) {
      for (const t of targets) if (!state.names.has(t)) state.names.set(t, t);
    }
    state.allCodes = [...state.names.keys()]
      .sort((a, b) => langName(a).localeCompare(langName(b)));
  }

  async function init() {
    const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
    els.hint.textContent = `${isMac ? '⌘' : 'Ctrl'} + Enter to translate now`;
    setStatus('Loading…', true);

    const params = new URLSearchParams(location.search);
    const urlQ = params.get('q');
    if (urlQ) els.sourceText.value = urlQ;
    const urlContext = params.get('context');
    if (urlContext) els.context.value = urlContext;
    updateCounter();

    const [settingsResult, langsResult] = await Promise.allSettled([
      getJSON('/frontend/settings'),
      getJSON('/languages'),
    ]);

    const problems = [];
    if (settingsResult.status === 'fulfilled' && settingsResult.value) {
      const s = settingsResult.value;
      const limit = Number(s.charLimit);
      state.charLimit = Number.isFinite(limit) ? limit : -1;
      state.keyRequired = Boolean(s.keyRequired);
      const wait = s.frontendTimeout;
      if (typeof wait === 'number' && Number.isFinite(wait) && wait >= 0) state.debounceMs = wait;
      const src = s.language && s.language.source;
      const tgt = s.language && s.language.target;
      if (src && src.code) {
        state.defaults.source = src.code;
        if (src.name) state.names.set(src.code, src.name);
      }
      if (tgt && tgt.code) {
        state.defaults.target = tgt.code;
        if (tgt.name) state.names.set(tgt.code, tgt.name);
      }
      if (s.model) {
        els.model.textContent = s.model;
        els.model.hidden = false;
      }
    } else {
      problems.push(`settings (${describeError(settingsResult.reason)})`);
    }

    if (langsResult.status === 'fulfilled' && Array.isArray(langsResult.value)
        && langsResult.value.length) {
      applyLanguages(langsResult.value);
    } else {
      if (langsResult.status === 'rejected') {
        problems.push(`language list (${describeError(langsResult.reason)})`);
      }
      // Fall back to what the settings told us, so translating still works.
      const fallback = [...new Set([state.defaults.source, state.defaults.target, 'en', 'zh'])]
        .filter((c) => c && c !== 'auto')
        .map((code) => ({ code, name: state.names.get(code) || code, targets: [] }));
      applyLanguages(fallback);
    }

    if (state.keyRequired) {
      els.apiKeyRow.hidden = false;
      try { els.apiKey.value = localStorage.getItem(API_KEY_STORAGE) || ''; } catch (_) { /* private mode */ }
    }

    fillSourceSelect();
    const wantSource = params.get('source');
    const source = [wantSource, state.defaults.source].find((c) => c && hasSourceOption(c)) || 'auto';
    els.sourceLang.value = source;
    fillTargetSelect(params.get('target') || state.defaults.target);

    updateCounter();
    updateDirections();
    updateSwapState();
    state.ready = true;
    document.body.dataset.ready = 'true'; // lets tests and tools wait for start-up
    setStatus('');

    if (problems.length) {
      showError(`Could not load the ${problems.join(' and ')}.`, 'load');
    }

    syncUrlNow();
    if (els.sourceText.value.trim()) translate({ force: true });
    else if (window.matchMedia('(min-width: 700px)').matches) els.sourceText.focus();
  }

  els.sourceText.addEventListener('input', onInput);
  els.context.addEventListener('input', onInput); // a new context is a new request
  els.sourceLang.addEventListener('change', onSourceLangChange);
  els.targetLang.addEventListener('change', onTargetLangChange);
  els.swap.addEventListener('click', swap);
  els.copy.addEventListener('click', copyTranslation);
  els.clear.addEventListener('click', clearSource);
  els.apiKeyRow.addEventListener('submit', (e) => e.preventDefault());
  els.apiKey.addEventListener('change', () => {
    try { localStorage.setItem(API_KEY_STORAGE, els.apiKey.value.trim()); } catch (_) { /* ignore */ }
    translate({ force: true });
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.isComposing) {
      e.preventDefault();
      translate({ force: true });
    }
  });

  init().catch((err) => {
    state.ready = true;
    document.body.dataset.ready = 'true';
    setStatus('');
    showError(`The page failed to start: ${describeError(err)}`, 'load');
  });
})();
