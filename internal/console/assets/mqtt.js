// A small MQTT 5 client over WebSocket, and the state store protocol on
// top of it (RESP3 requests with Response Topic and Correlation Data,
// KEYNOTIFY notifications). The browser frames the WebSocket; this file
// encodes and decodes MQTT packets in the binary messages, split
// anywhere. It does what the console needs: CONNECT, PUBLISH and
// SUBSCRIBE at QoS 1, PUBACK, keep alive, DISCONNECT.
"use strict";

const enc = new TextEncoder();
const dec = new TextDecoder();

const REQUEST_TOPIC = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke";
const NOTIFY_PREFIX = "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/";

const CONNECT = 1, CONNACK = 2, PUBLISH = 3, PUBACK = 4, SUBSCRIBE = 8, SUBACK = 9,
  PINGREQ = 12, PINGRESP = 13, DISCONNECT = 14;

// Reason codes a person may meet, and what they mean.
const REASONS = {
  0x80: "unspecified error", 0x81: "malformed packet", 0x82: "protocol error",
  0x83: "implementation specific error", 0x85: "client identifier not valid",
  0x86: "bad user name or password", 0x87: "not authorized", 0x88: "server unavailable",
  0x89: "server busy", 0x8b: "server shutting down", 0x8c: "bad authentication method",
  0x8d: "keep alive timeout", 0x8e: "session taken over", 0x93: "receive maximum exceeded",
  0x95: "packet too large", 0x97: "quota exceeded", 0x9c: "use another server", 0x9f: "connection rate exceeded",
};
function reasonText(code) { return REASONS[code] || "reason code 0x" + code.toString(16); }

// bytes turns a string (UTF-8) or bytes into a Uint8Array.
function bytes(v) { return typeof v === "string" ? enc.encode(v) : v; }

function concat(parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

function varint(n) {
  const out = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return Uint8Array.from(out);
}

function u16(n) { return Uint8Array.of(n >> 8, n & 0xff); }
function u32(n) { return Uint8Array.of(n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff); }
function str(s) { const b = bytes(s); return concat([u16(b.length), b]); }

// props encodes MQTT 5 properties: a list of [id, kind, value].
function props(list) {
  const parts = [];
  for (const [id, kind, v] of list) {
    if (v === undefined || v === null) continue;
    parts.push(Uint8Array.of(id));
    if (kind === "u32") parts.push(u32(v));
    else if (kind === "u16") parts.push(u16(v));
    else if (kind === "pair") parts.push(str(v[0]), str(v[1]));
    else parts.push(str(v)); // string or binary data
  }
  const body = concat(parts);
  return concat([varint(body.length), body]);
}

function packet(type, flags, body) {
  return concat([Uint8Array.of((type << 4) | flags), varint(body.length), body]);
}

// Reader reads the fields of a packet's body.
class Reader {
  constructor(b) { this.b = b; this.o = 0; }
  left() { return this.b.length - this.o; }
  u8() { if (this.o >= this.b.length) throw new Error("malformed packet"); return this.b[this.o++]; }
  u16() { return (this.u8() << 8) | this.u8(); }
  u32() { return ((this.u8() << 24) >>> 0) + (this.u8() << 16) + (this.u8() << 8) + this.u8(); }
  varint() {
    let n = 0, m = 1, b;
    do { b = this.u8(); n += (b & 0x7f) * m; m *= 128; } while (b & 0x80);
    return n;
  }
  bin() { const n = this.u16(); const v = this.b.subarray(this.o, this.o + n); this.o += n; return v; }
  str() { return dec.decode(this.bin()); }
  rest() { const v = this.b.subarray(this.o); this.o = this.b.length; return v; }
  props() {
    const end = this.o + this.varint();
    const p = { user: [] };
    while (this.o < end) {
      const id = this.u8();
      switch (id) {
        case 0x01: p.payloadFormat = this.u8(); break;
        case 0x02: p.messageExpiry = this.u32(); break;
        case 0x03: p.contentType = this.str(); break;
        case 0x08: p.responseTopic = this.str(); break;
        case 0x09: p.correlation = this.bin(); break;
        case 0x0b: p.subscriptionId = this.varint(); break;
        case 0x11: p.sessionExpiry = this.u32(); break;
        case 0x12: p.assignedClientId = this.str(); break;
        case 0x13: p.serverKeepAlive = this.u16(); break;
        case 0x1f: p.reason = this.str(); break;
        case 0x21: p.receiveMaximum = this.u16(); break;
        case 0x22: p.topicAliasMaximum = this.u16(); break;
        case 0x23: p.topicAlias = this.u16(); break;
        case 0x24: p.maximumQoS = this.u8(); break;
        case 0x25: p.retainAvailable = this.u8(); break;
        case 0x26: p.user.push([this.str(), this.str()]); break;
        case 0x27: p.maximumPacketSize = this.u32(); break;
        case 0x28: case 0x29: case 0x2a: this.u8(); break;
        case 0x1a: case 0x1c: p.ignored = this.str(); break;
        case 0x15: p.authMethod = this.str(); break;
        case 0x16: p.authData = this.bin(); break;
        case 0x17: case 0x19: this.u8(); break;
        case 0x18: this.u32(); break;
        default: throw new Error("unknown property 0x" + id.toString(16));
      }
    }
    return p;
  }
}

// MQTTClient is one MQTT 5 connection over WebSocket.
class MQTTClient {
  // url: ws:// or wss://; opts: clientId, username, password, keepAlive,
  // onPublish(pk), onClose(why).
  constructor(url, opts) {
    this.url = url;
    this.opts = opts;
    this.nextId = 1;
    this.pending = new Map(); // packet id -> {resolve, reject}
    this.aliases = new Map();
    this.buf = new Uint8Array(0);
    this.closed = false;
  }

  // connect opens the connection and resolves with the CONNACK's
  // properties, or rejects with the reason.
  connect() {
    return new Promise((resolve, reject) => {
      let ws;
      try {
        ws = new WebSocket(this.url, ["mqtt"]);
      } catch (e) {
        reject(e);
        return;
      }
      ws.binaryType = "arraybuffer";
      this.ws = ws;
      this.connack = { resolve, reject };
      ws.onopen = () => {
        const o = this.opts;
        let flags = 0x02; // clean start
        if (o.username) flags |= 0x80;
        if (o.password) flags |= 0x40;
        const body = [str("MQTT"), Uint8Array.of(5, flags), u16(o.keepAlive || 30),
          props([[0x11, "u32", 0]]), str(o.clientId || "")];
        if (o.username) body.push(str(o.username));
        if (o.password) body.push(str(o.password));
        this.send(packet(CONNECT, 0, concat(body)));
      };
      ws.onmessage = (e) => this.received(new Uint8Array(e.data));
      ws.onerror = () => {};
      ws.onclose = (e) => this.ended(this.why || (e.reason ? e.reason : "the connection closed (" + e.code + ")"));
    });
  }

  send(b) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(b);
  }

  received(chunk) {
    this.buf = this.buf.length ? concat([this.buf, chunk]) : chunk;
    for (;;) {
      const b = this.buf;
      if (b.length < 2) return;
      let n = 0, m = 1, i = 1, c;
      do {
        if (i >= b.length) return;
        c = b[i++];
        n += (c & 0x7f) * m;
        m *= 128;
      } while (c & 0x80);
      if (b.length < i + n) return;
      const type = b[0] >> 4, flags = b[0] & 0x0f;
      const body = b.slice(i, i + n);
      this.buf = b.subarray(i + n);
      try {
        this.handle(type, flags, new Reader(body));
      } catch (e) {
        this.why = "the server sent a packet this page cannot read: " + e.message;
        this.ws.close();
        return;
      }
    }
  }

  handle(type, flags, r) {
    switch (type) {
      case CONNACK: {
        r.u8();
        const code = r.u8();
        const p = r.left() ? r.props() : { user: [] };
        const c = this.connack;
        this.connack = null;
        if (!c) return;
        if (code !== 0) {
          this.why = "refused: " + reasonText(code) + (p.reason ? " (" + p.reason + ")" : "");
          c.reject(new Error(this.why));
          this.ws.close();
          return;
        }
        this.clientId = p.assignedClientId || this.opts.clientId;
        const ka = p.serverKeepAlive !== undefined ? p.serverKeepAlive : (this.opts.keepAlive || 30);
        if (ka > 0) this.ping = setInterval(() => this.send(packet(PINGREQ, 0, new Uint8Array(0))), ka * 500);
        c.resolve(p);
        return;
      }
      case PUBLISH: {
        const qos = (flags >> 1) & 3;
        let topic = r.str();
        const id = qos > 0 ? r.u16() : 0;
        const p = r.props();
        if (p.topicAlias) {
          if (topic) this.aliases.set(p.topicAlias, topic);
          else topic = this.aliases.get(p.topicAlias) || "";
        }
        const payload = r.rest();
        if (qos === 1) this.send(packet(PUBACK, 0, u16(id)));
        if (qos === 2) this.send(packet(5, 0, u16(id))); // PUBREC; the console never asks for QoS 2
        if (this.opts.onPublish) this.opts.onPublish({ topic, payload, props: p });
        return;
      }
      case PUBACK: case SUBACK: {
        const id = r.u16();
        const wait = this.pending.get(id);
        this.pending.delete(id);
        let codes = [0];
        let p = { user: [] };
        if (r.left()) {
          if (type === PUBACK) codes = [r.u8()];
          if (r.left()) p = r.props();
          if (type === SUBACK) codes = Array.from(r.rest());
        }
        if (wait) wait.resolve({ codes, props: p });
        return;
      }
      case 6: { // PUBREL of a QoS 2 message
        this.send(packet(7, 0, u16(r.u16())));
        return;
      }
      case PINGRESP:
        return;
      case DISCONNECT: {
        const code = r.left() ? r.u8() : 0;
        const p = r.left() ? r.props() : { user: [] };
        this.why = "the server disconnected: " + reasonText(code) + (p.reason ? " (" + p.reason + ")" : "");
        return;
      }
    }
  }

  id() {
    for (;;) {
      const id = this.nextId;
      this.nextId = this.nextId % 65535 + 1;
      if (!this.pending.has(id)) return id;
    }
  }

  wait(id) {
    return new Promise((resolve, reject) => {
      if (this.closed) { reject(new Error(this.why || "not connected")); return; }
      this.pending.set(id, { resolve, reject });
    });
  }

  // publish sends a QoS 1 PUBLISH and resolves with its PUBACK.
  publish(topic, payload, p) {
    const id = this.id();
    const body = concat([str(topic), u16(id), props([
      [0x03, "s", p.contentType], [0x08, "s", p.responseTopic], [0x09, "b", p.correlation],
      ...(p.user || []).map((kv) => [0x26, "pair", kv]),
    ]), bytes(payload)]);
    const done = this.wait(id);
    this.send(packet(PUBLISH, 0x02, body));
    return done;
  }

  // subscribe subscribes to filter with QoS 1 and resolves with the
  // SUBACK's reason code.
  subscribe(filter) {
    const id = this.id();
    const body = concat([u16(id), props([]), str(filter), Uint8Array.of(1)]);
    const done = this.wait(id);
    this.send(packet(SUBSCRIBE, 0x02, body));
    return done.then((a) => a.codes[0]);
  }

  disconnect() {
    this.why = "signed out";
    this.send(packet(DISCONNECT, 0, Uint8Array.of(0, 0)));
    if (this.ws) this.ws.close(1000);
  }

  ended(why) {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.ping);
    if (this.connack) { this.connack.reject(new Error(why)); this.connack = null; }
    for (const w of this.pending.values()) w.reject(new Error(why));
    this.pending.clear();
    if (this.opts.onClose) this.opts.onClose(why);
  }
}

// RESP3: requests are arrays of bulk strings; replies are parsed into
// {type, value}: "simple", "error", "int", "bulk" (bytes), "null",
// "array" (of replies).
function respRequest(args) {
  const parts = [enc.encode("*" + args.length + "\r\n")];
  for (const a of args) {
    const b = bytes(a);
    parts.push(enc.encode("$" + b.length + "\r\n"), b, enc.encode("\r\n"));
  }
  return concat(parts);
}

function respParse(b) {
  let o = 0;
  const line = () => {
    let i = o;
    while (i + 1 < b.length && !(b[i] === 13 && b[i + 1] === 10)) i++;
    if (i + 1 >= b.length) throw new Error("truncated reply");
    const s = dec.decode(b.subarray(o, i));
    o = i + 2;
    return s;
  };
  const one = () => {
    const t = String.fromCharCode(b[o++]);
    switch (t) {
      case "+": return { type: "simple", value: line() };
      case "-": return { type: "error", value: line() };
      case ":": return { type: "int", value: parseInt(line(), 10) };
      case "_": line(); return { type: "null" };
      case "$": {
        const n = parseInt(line(), 10);
        if (n < 0) return { type: "null" };
        const v = b.slice(o, o + n);
        o += n + 2;
        return { type: "bulk", value: v };
      }
      case "*": {
        const n = parseInt(line(), 10);
        if (n < 0) return { type: "null" };
        const v = [];
        for (let i = 0; i < n; i++) v.push(one());
        return { type: "array", value: v };
      }
    }
    throw new Error("unknown reply type " + JSON.stringify(t));
  };
  return one();
}

function hex(b) {
  let s = "";
  for (const c of b) s += c.toString(16).padStart(2, "0").toUpperCase();
  return s;
}

function unhex(s) {
  if (s.length % 2) throw new Error("an odd number of hex digits");
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) {
    const v = parseInt(s.substr(i * 2, 2), 16);
    if (Number.isNaN(v)) throw new Error("not a hex digit: " + s.substr(i * 2, 2));
    out[i] = v;
  }
  return out;
}

// hlcNow is a version-shaped timestamp of the browser's clock for __ts.
function hlcNow() {
  return String(Date.now()).padStart(15, "0") + ":00000:console";
}

// StateStore makes state store requests over an MQTTClient and hands
// KEYNOTIFY notifications to onNotify(key bytes, {op, value, version}).
class StateStore {
  constructor(client, onNotify) {
    this.c = client;
    this.onNotify = onNotify;
    this.calls = new Map();
    this.seq = 0;
  }

  // start subscribes to the response topic (and the notification topic,
  // which dss would deliver anyway).
  async start() {
    const id = this.c.clientId;
    this.responseTopic = "clients/" + id + "/services/statestore/_any_/command/invoke/response";
    this.notifyPrefix = NOTIFY_PREFIX + hex(enc.encode(id)) + "/command/notify/";
    const code = await this.c.subscribe(this.responseTopic);
    if (code >= 0x80) throw new Error("subscribing to the response topic: " + reasonText(code));
  }

  // onPublish routes a message to its request or to onNotify.
  onPublish(pk) {
    const user = Object.fromEntries(pk.props.user);
    if (pk.topic === this.responseTopic && pk.props.correlation) {
      const k = hex(pk.props.correlation);
      const call = this.calls.get(k);
      if (call) {
        this.calls.delete(k);
        clearTimeout(call.timer);
        call.resolve({ reply: respParse(pk.payload), version: user.__ts || "", user });
      }
      return;
    }
    if (this.notifyPrefix && pk.topic.startsWith(this.notifyPrefix)) {
      const key = unhex(pk.topic.slice(this.notifyPrefix.length));
      const r = respParse(pk.payload);
      const els = r.type === "array" ? r.value : [];
      const op = els[1] ? dec.decode(els[1].value) : "?";
      this.onNotify(key, { op, value: op === "SET" && els[3] ? els[3].value : null, version: user.__ts || "" });
    }
  }

  // request sends args (strings or bytes) with the user properties of
  // user and resolves with {reply, version}. A refused PUBACK rejects.
  async request(args, user) {
    const corr = enc.encode("c" + (++this.seq));
    const k = hex(corr);
    const answer = new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.calls.delete(k); reject(new Error("no answer in 10 s")); }, 10000);
      this.calls.set(k, { resolve, reject, timer });
    });
    const ack = await this.c.publish(REQUEST_TOPIC, respRequest(args), {
      responseTopic: this.responseTopic, correlation: corr, user: user || [],
    });
    if (ack.codes[0] >= 0x80) {
      const c = this.calls.get(k);
      if (c) { clearTimeout(c.timer); this.calls.delete(k); }
      throw new Error("refused: " + reasonText(ack.codes[0]) + (ack.props.reason ? " (" + ack.props.reason + ")" : ""));
    }
    return answer;
  }

  failAll(why) {
    for (const c of this.calls.values()) { clearTimeout(c.timer); c.reject(new Error(why)); }
    this.calls.clear();
  }
}

window.dssMQTT = { MQTTClient, StateStore, respRequest, respParse, hex, unhex, hlcNow, reasonText };
