// The console's page: sign-in through /v1/console/session, keys through
// the state store protocol over MQTT over WebSocket (mqtt.js), the
// overview through /v1/status. docs/console.md describes it.
"use strict";

(function () {
  const { MQTTClient, StateStore, hex, unhex, hlcNow } = window.dssMQTT;
  const $ = (id) => document.getElementById(id);
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const strict = new TextDecoder("utf-8", { fatal: true });

  let session = null;  // the answer of GET /v1/console/session
  let client = null, store = null;
  let signedOut = false;
  let current = null;  // the open key: {key, value, version, deadline, fence, deleted}
  let view = "text";
  let pattern = "*", token = null;
  const watches = new Map(); // "p:" or "k:" + hex -> {target (bytes), pattern}
  let prevStatus = null, statusTimer = null, ttlTimer = null, retryTimer = null;

  // ---- small helpers
  function text(b) { return dec.decode(b); }
  function show(el, on) { el.hidden = !on; }
  function alertMsg(msg, info) {
    const a = $("alert");
    a.textContent = msg;
    a.className = info ? "alert info" : "alert";
    show(a, !!msg);
  }
  function clearAlert() { alertMsg(""); }
  function fmtBytes(n) {
    if (n < 1024) return n + " B";
    const u = ["KiB", "MiB", "GiB", "TiB"];
    let i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
    return n.toFixed(n < 10 ? 1 : 0) + " " + u[i];
  }
  function fmtRate(n) { return n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString(); }
  function fmtTTL(ms) {
    if (ms <= 0) return "expired";
    if (ms < 60000) return "in " + (ms / 1000).toFixed(1) + " s";
    if (ms < 3600000) return "in " + Math.floor(ms / 60000) + " min " + Math.floor(ms % 60000 / 1000) + " s";
    return "in " + (ms / 3600000).toFixed(1) + " h";
  }
  function sameBytes(a, b) { return a && b && hex(a) === hex(b); }
  function versionProps(ft) {
    const p = [["__ts", hlcNow()]];
    if (ft) p.push(["__ft", ft]);
    return p;
  }

  async function api(method, body) {
    const headers = {};
    if (body) headers["Content-Type"] = "application/json";
    if (method !== "GET" && session && session.csrf) headers["X-DSS-CSRF"] = session.csrf;
    const res = await fetch("/v1/console/session", {
      method, headers, credentials: "same-origin", body: body ? JSON.stringify(body) : undefined,
    });
    let json = {};
    try { json = await res.json(); } catch (e) { /* 204 */ }
    return { status: res.status, json };
  }

  // ---- sign-in
  async function init() {
    let r;
    try {
      r = await api("GET");
    } catch (e) {
      showSignIn("cannot reach the server: " + e.message);
      return;
    }
    if (r.status === 200) {
      session = r.json;
      startApp();
    } else if (r.status === 401 && r.json.signIn) {
      showSignIn("");
    } else {
      showSignIn(r.json.error || "the console is not available (" + r.status + ")");
      $("signin-button").disabled = !r.json.signIn;
    }
  }

  function showSignIn(err) {
    show($("app"), false);
    show($("signin-view"), true);
    show($("signout"), false);
    $("who").textContent = "";
    $("signin-error").textContent = err;
    $("username").focus();
  }

  $("signin").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("signin-error").textContent = "";
    $("signin-button").disabled = true;
    try {
      const r = await api("POST", { username: $("username").value, password: $("password").value });
      if (r.status !== 200) {
        $("signin-error").textContent = r.json.error || "sign-in failed (" + r.status + ")";
        return;
      }
      $("password").value = "";
      session = r.json;
      startApp();
    } catch (err) {
      $("signin-error").textContent = err.message;
    } finally {
      $("signin-button").disabled = false;
    }
  });

  $("signout").addEventListener("click", async () => {
    signedOut = true;
    if (client) client.disconnect();
    await api("DELETE").catch(() => {});
    session = null;
    clearInterval(statusTimer);
    showSignIn("");
  });

  function startApp() {
    signedOut = false;
    show($("signin-view"), false);
    show($("app"), true);
    $("who").textContent = session.user || (session.auth ? "" : "no authentication (this machine only)");
    show($("signout"), !!session.auth);
    connect();
    pollStatus();
    clearInterval(statusTimer);
    statusTimer = setInterval(pollStatus, 2000);
  }

  // ---- MQTT over WebSocket
  function wsURL() {
    const m = session.mqtt || {};
    const secure = location.protocol === "https:";
    let scheme = "ws", port = m.ws;
    if ((secure || !m.ws) && m.wss) { scheme = "wss"; port = m.wss; }
    if (!port || (secure && scheme === "ws")) return "";
    return scheme + "://" + location.hostname + ":" + port + "/mqtt";
  }

  function setConn(state) {
    const c = $("conn");
    c.textContent = state;
    c.className = "conn " + (state === "online" ? "online" : "offline");
  }

  async function connect() {
    clearTimeout(retryTimer);
    const url = wsURL();
    if (!url) {
      setConn("offline");
      alertMsg("MQTT over WebSocket is off on this server" + (location.protocol === "https:" ? " over TLS" : "") +
        ": start dss with --ws-listen (or --wss-listen) to browse and change keys here.");
      return;
    }
    const id = $("client-id").value.trim() || "console-" + hex(crypto.getRandomValues(new Uint8Array(6))).toLowerCase();
    const m = session.mqtt;
    const c = new MQTTClient(url, {
      clientId: id, username: m.username, password: m.password, keepAlive: 30,
      onPublish: (pk) => { if (store) store.onPublish(pk); },
      onClose: (why) => closed(c, why),
    });
    client = c;
    setConn("connecting");
    try {
      await c.connect();
      const s = new StateStore(c, notified);
      await s.start();
      store = s;
      setConn("online");
      clearAlert();
      await rewatch();
      if (current) await openKey(current.key, true);
      else await search(false);
    } catch (e) {
      if (client === c) alertMsg("MQTT over WebSocket: " + e.message);
    }
  }

  async function closed(c, why) {
    if (client !== c) return;
    store && store.failAll(why);
    store = null;
    setConn("offline");
    if (signedOut) return;
    // The session may have ended (signed out elsewhere, expired).
    const r = await api("GET").catch(() => null);
    if (r && r.status === 401) {
      session = null;
      clearInterval(statusTimer);
      showSignIn("your session ended: sign in again");
      return;
    }
    alertMsg("MQTT over WebSocket: " + why + "; connecting again…");
    retryTimer = setTimeout(connect, 2000);
  }

  async function request(args, user) {
    if (!store) throw new Error("not connected");
    return store.request(args, user);
  }

  // ---- keys
  $("search").addEventListener("submit", (e) => { e.preventDefault(); pattern = $("pattern").value || "*"; search(false); });
  $("more").addEventListener("click", () => search(true));

  async function search(more) {
    if (!more) {
      token = null;
      $("keys").textContent = "";
      $("key-count").textContent = "searching…";
    }
    let found = 0;
    try {
      // Pages may be empty while others follow: read on until some keys
      // came, or a few pages.
      for (let pages = 0; pages < 32; pages++) {
        const args = ["SCAN", pattern];
        if (token) args.push(token);
        const { reply } = await request(args);
        if (reply.type === "error") { alertMsg("SCAN refused: " + reply.value.replace(/^ERR /, "")); break; }
        const page = reply.value;
        for (const k of page[0].value) { addKey(k.value); found++; }
        token = page.length > 1 ? page[1].value : null;
        if (!token || found >= 50) break;
      }
    } catch (e) {
      alertMsg(e.message);
    }
    const n = $("keys").children.length;
    $("key-count").textContent = n + (n === 1 ? " key" : " keys") + (token ? " so far" : "") + " matching " + pattern;
    show($("more"), !!token);
  }

  function addKey(k) {
    const li = document.createElement("li");
    li.textContent = text(k);
    li.dataset.hex = hex(k);
    li.addEventListener("click", () => openKey(k));
    $("keys").appendChild(li);
  }

  async function openKey(key, quiet) {
    if (current && !sameBytes(current.key, key) && !watches.has("k:" + hex(current.key))) {
      request(["KEYNOTIFY", current.key, "STOP"]).catch(() => {});
    }
    for (const li of $("keys").children) li.classList.toggle("active", li.dataset.hex === hex(key));
    if (!quiet) clearAlert();
    try {
      const { reply, version } = await request(["KEYINFO", key]);
      if (reply.type === "error") {
        alertMsg("Refused: " + reply.value.replace(/^ERR /, "") + " (KEYINFO " + text(key) + ")");
        return;
      }
      if (reply.type === "null") {
        current = { key, deleted: true };
      } else {
        const [v, ttl, ft] = reply.value.map((e) => e.value);
        const ms = parseInt(text(ttl), 10);
        current = { key, value: v, version, deadline: ms < 0 ? 0 : Date.now() + ms, fence: text(ft) };
      }
      render(!quiet);
      await request(["KEYNOTIFY", key]);
    } catch (e) {
      alertMsg(e.message);
    }
  }

  function render(fillEditor) {
    show($("detail"), true);
    const c = current;
    $("detail-key").textContent = text(c.key);
    if (fillEditor) $("edit-key").value = text(c.key);
    if (c.deleted) {
      $("detail-version").textContent = "–";
      $("detail-ttl").textContent = "–";
      $("detail-fence").textContent = "–";
      $("detail-size").textContent = "";
      $("value").textContent = "(no such key: deleted, expired or never set)";
      return;
    }
    $("detail-version").textContent = c.version;
    $("detail-fence").textContent = c.fence || "none";
    $("detail-size").textContent = fmtBytes(c.value.length);
    renderTTL();
    clearInterval(ttlTimer);
    if (c.deadline) ttlTimer = setInterval(renderTTL, 500);
    renderValue();
    if (fillEditor) {
      let isText = true;
      try { strict.decode(c.value); } catch (e) { isText = false; }
      $("edit-hex").checked = !isText;
      $("edit-value").value = isText ? text(c.value) : hex(c.value);
      $("edit-ft").value = c.fence || "";
      $("edit-px").value = "";
    }
  }

  function renderTTL() {
    if (!current || current.deleted) return;
    $("detail-ttl").textContent = current.deadline ? fmtTTL(current.deadline - Date.now()) : "never";
  }

  function renderValue() {
    const v = current.value, out = $("value");
    out.classList.remove("flash");
    if (view === "hex") {
      const lines = [];
      for (let o = 0; o < v.length; o += 16) {
        const row = v.subarray(o, o + 16);
        const h = Array.from(row, (b) => b.toString(16).padStart(2, "0")).join(" ");
        const a = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
        lines.push(o.toString(16).padStart(8, "0") + "  " + h.padEnd(48) + "  " + a);
      }
      out.textContent = lines.join("\n") || "(empty)";
      return;
    }
    let s;
    try {
      s = strict.decode(v);
    } catch (e) {
      out.textContent = "(not UTF-8 text: see Hex)\n" + text(v);
      return;
    }
    if (view === "json") {
      try {
        s = JSON.stringify(JSON.parse(s), null, 2);
      } catch (e) {
        out.textContent = "(not JSON: " + e.message + ")\n" + s;
        return;
      }
    }
    out.textContent = s === "" ? "(empty)" : s;
  }

  for (const b of document.querySelectorAll(".view")) {
    b.addEventListener("click", () => {
      view = b.dataset.view;
      for (const o of document.querySelectorAll(".view")) o.classList.toggle("active", o === b);
      if (current && !current.deleted) renderValue();
    });
  }

  $("new-key").addEventListener("click", () => {
    current = null;
    show($("detail"), true);
    $("detail-key").textContent = "new key";
    for (const id of ["detail-version", "detail-ttl", "detail-fence", "detail-size"]) $(id).textContent = "";
    $("value").textContent = "";
    $("edit-key").value = "";
    $("edit-value").value = "";
    $("edit-hex").checked = false;
    $("edit-key").focus();
  });

  function editedValue() {
    const s = $("edit-value").value;
    return $("edit-hex").checked ? unhex(s.replace(/\s+/g, "")) : enc.encode(s);
  }

  $("edit").addEventListener("submit", async (e) => {
    e.preventDefault();
    clearAlert();
    try {
      const key = enc.encode($("edit-key").value);
      const args = ["SET", key, editedValue()];
      const px = $("edit-px").value.trim();
      if (px) args.push("PX", px);
      const { reply } = await request(args, versionProps($("edit-ft").value.trim()));
      if (reply.type === "error") { alertMsg("Refused: " + reply.value.replace(/^ERR /, "") + " (SET " + $("edit-key").value + ")"); return; }
      if (reply.type === "int") { alertMsg("Not set: the condition was not met"); return; }
      alertMsg("Saved " + $("edit-key").value, true);
      await openKey(key, true);
      if (!current || !sameBytes(current.key, key)) return;
      render(true);
    } catch (err) {
      alertMsg(err.message);
    }
  });

  $("delete").addEventListener("click", async () => {
    clearAlert();
    const keyText = $("edit-key").value;
    if (!keyText || !confirm("Delete " + keyText + "?")) return;
    try {
      const ft = $("edit-ft").value.trim();
      const { reply } = await request(["DEL", enc.encode(keyText)], ft ? [["__ft", ft]] : []);
      if (reply.type === "error") { alertMsg("Refused: " + reply.value.replace(/^ERR /, "") + " (DEL " + keyText + ")"); return; }
      alertMsg(reply.value === 1 ? "Deleted " + keyText : "No such key: " + keyText, reply.value === 1);
      for (const li of Array.from($("keys").children)) if (li.dataset.hex === hex(enc.encode(keyText))) li.remove();
    } catch (err) {
      alertMsg(err.message);
    }
  });

  $("watch-key").addEventListener("click", () => {
    if (!$("edit-key").value) return;
    addWatch(enc.encode($("edit-key").value), false);
  });

  // ---- notifications
  function notified(key, ev) {
    logEvent(key, ev);
    if (current && sameBytes(current.key, key)) {
      if (ev.op === "DELETE") {
        current = { key, deleted: true };
        render(false);
      } else {
        openKey(key, true).then(() => $("value").classList.add("flash"));
      }
    }
  }

  function logEvent(key, ev) {
    const tr = document.createElement("tr");
    const cells = [new Date().toLocaleTimeString(), text(key), ev.op,
      ev.value ? (text(ev.value).length > 80 ? text(ev.value).slice(0, 80) + "…" : text(ev.value)) : "", ev.version];
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = c;
      tr.appendChild(td);
    }
    const body = $("events");
    body.insertBefore(tr, body.firstChild);
    while (body.children.length > 200) body.lastChild.remove();
  }

  $("watch").addEventListener("submit", (e) => {
    e.preventDefault();
    const t = $("watch-target").value;
    if (t) addWatch(enc.encode(t), $("watch-pattern").checked);
  });

  async function addWatch(target, isPattern) {
    clearAlert();
    const id = (isPattern ? "p:" : "k:") + hex(target);
    try {
      const args = ["KEYNOTIFY", target];
      if (isPattern) args.push("PATTERN");
      const { reply } = await request(args);
      if (reply.type === "error") { alertMsg("Refused: " + reply.value.replace(/^ERR /, "")); return; }
      watches.set(id, { target, pattern: isPattern });
      renderWatches();
      alertMsg("Watching " + (isPattern ? "pattern " : "key ") + text(target), true);
    } catch (err) {
      alertMsg(err.message);
    }
  }

  async function rewatch() {
    for (const w of watches.values()) {
      const args = ["KEYNOTIFY", w.target];
      if (w.pattern) args.push("PATTERN");
      await request(args).catch(() => {});
    }
  }

  function renderWatches() {
    const ul = $("watches");
    ul.textContent = "";
    for (const [id, w] of watches) {
      const li = document.createElement("li");
      li.textContent = (w.pattern ? "pattern " : "key ") + text(w.target);
      const stop = document.createElement("button");
      stop.textContent = "×";
      stop.title = "stop watching";
      stop.addEventListener("click", async () => {
        const args = ["KEYNOTIFY", w.target];
        if (w.pattern) args.push("PATTERN");
        args.push("STOP");
        await request(args).catch(() => {});
        watches.delete(id);
        renderWatches();
      });
      li.appendChild(stop);
      ul.appendChild(li);
    }
  }

  // ---- overview
  async function pollStatus() {
    let res;
    try {
      res = await fetch("/v1/status", { credentials: "same-origin" });
    } catch (e) {
      return;
    }
    if (res.status === 401) {
      signedOut = true;
      if (client) client.disconnect();
      session = null;
      clearInterval(statusTimer);
      showSignIn("your session ended: sign in again");
      return;
    }
    if (res.status !== 200) return;
    const s = await res.json();
    $("node").textContent = s.node + (s.notReady ? " (not ready: " + s.notReady + ")" : "");
    $("st-clients").textContent = s.clients.toLocaleString();
    $("st-keys").textContent = s.keys.toLocaleString();
    $("st-bytes").textContent = fmtBytes(s.storeBytes);
    if (prevStatus) {
      const dt = (Date.parse(s.time) - Date.parse(prevStatus.time)) / 1000;
      if (dt > 0) {
        $("st-requests").textContent = fmtRate((s.requests - prevStatus.requests) / dt);
        $("st-in").textContent = fmtRate((s.messagesReceived - prevStatus.messagesReceived) / dt);
        $("st-out").textContent = fmtRate((s.messagesSent - prevStatus.messagesSent) / dt);
      }
    }
    prevStatus = s;
    $("st-node").textContent = "node " + s.node + ", dss " + s.version + ", up since " + new Date(s.started).toLocaleString();
    renderCluster(s.cluster);
  }

  function renderCluster(c) {
    show($("cluster"), !!c);
    if (!c) return;
    $("cluster-summary").textContent = c.error ? "status incomplete: " + c.error :
      "leader " + (c.leader || "none") + ", term " + c.term + ", commit index " + c.commitIndex;
    const body = $("members");
    body.textContent = "";
    for (const m of c.members) {
      const tr = document.createElement("tr");
      const cells = [m.id + (m.id === c.leader ? " (leader)" : ""), m.error ? "unreachable" : m.state, m.addr,
        m.error ? "–" : String(m.appliedIndex), m.error ? m.error : String(m.lag)];
      cells.forEach((v, i) => {
        const td = document.createElement("td");
        td.textContent = v;
        if (i === 0 && m.id === c.leader) td.className = "leader";
        if (i === 4) td.className = m.error ? "unreachable" : (m.lag > 0 ? "lagging" : "");
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
  }

  // ---- tabs
  for (const b of document.querySelectorAll(".tab")) {
    b.addEventListener("click", () => {
      clearAlert();
      for (const o of document.querySelectorAll(".tab")) o.classList.toggle("active", o === b);
      for (const t of ["keys", "watch", "overview"]) show($("tab-" + t), t === b.dataset.tab);
    });
  }

  init();
})();
