(function (emit, maxLineChars, maxErrorChars, utf8Length) { // Guest prelude, run in QuickJS: see PRELUDE in sandbox-worker.ts. Keep this line first: the lines below are the ones guest stack traces show.
  "use strict";
  var G = globalThis;
  var stringify = JSON.stringify;
  var parse = JSON.parse;
  var isArray = Array.isArray;
  var NativePromise = Promise;
  var NativeError = Error;
  var NativeMap = Map;
  var toStr = String;
  var define = Object.defineProperty;
  var create = Object.create;
  var locationRe = /:(\d+):(\d+)/;

  function typeName(v) {
    if (v === null) return "null";
    if (isArray(v)) return "array";
    if (v instanceof NativePromise) return "promise";
    return typeof v;
  }
  function isEvent(v) {
    return v !== null && typeof v === "object" && !isArray(v) && !(v instanceof NativePromise);
  }
  function contractError(message) {
    var e = new NativeError(message);
    e.name = "SluiceContractError";
    return e;
  }
  function fmtError(e) {
    var text = describeThrown(e);
    return text.length > maxErrorChars ? text.slice(0, maxErrorChars) + " ..." : text;
  }
  function describeThrown(e) {
    try {
      if (e !== null && typeof e === "object") {
        var name = e.name, message = e.message;
        if (name === "SluiceContractError") return toStr(message);
        if (typeof message === "string") {
          var n = typeof name === "string" && name !== "" ? name : "Error";
          var text = message === "" ? n : n + ": " + message;
          if (n === "SyntaxError" && typeof e.stack === "string") {
            var m = locationRe.exec(e.stack);
            if (m) text += " (line " + m[1] + ", column " + m[2] + ")";
          }
          return text;
        }
        var s = stringify(e);
        if (typeof s === "string") return "Uncaught " + s;
      }
      if (typeof e === "string") return e;
      return "Uncaught " + toStr(e);
    } catch (x) {
      return "Uncaught exception (it could not be printed)";
    }
  }
  function fmt(v) {
    if (typeof v === "string") return v;
    if (v instanceof NativeError) return fmtError(v);
    if (v !== null && typeof v === "object") {
      try {
        var s = stringify(v);
        if (typeof s === "string") return s;
      } catch (e) {}
    }
    try { return toStr(v); } catch (e) { return "[" + typeof v + "]"; }
  }
  function log() {
    var line = "";
    for (var i = 0; i < arguments.length; i++) {
      line += (i > 0 ? " " : "") + fmt(arguments[i]);
      if (line.length > maxLineChars) break;
    }
    if (line.length > maxLineChars) line = line.slice(0, maxLineChars);
    emit(line);
  }
  var consoleObject = { log: log, info: log, warn: log, error: log, debug: log };
  define(G, "log", { value: log, writable: true, configurable: true });
  define(G, "console", { value: consoleObject, writable: true, configurable: true });

  var registered = false, fe, fb;
  define(G, "__sluice_register__", {
    configurable: true,
    value: function (te, tb) {
      if (registered) return;
      registered = true;
      fe = te;
      fb = tb;
      delete G.__sluice_register__;
    },
  });

  function describe() {
    if (!registered) return "error:the code did not finish loading";
    var hasE = fe !== undefined, hasB = fb !== undefined;
    if (hasE && typeof fe !== "function") return "error:transformEvent must be a function (got " + typeName(fe) + ")";
    if (hasB && typeof fb !== "function") return "error:transformBatch must be a function (got " + typeName(fb) + ")";
    if (hasE && hasB) return "error:define only one of transformEvent(event, metadata) or transformBatch(events, metadata), not both";
    if (!hasE && !hasB) return "error:define a function transformEvent(event, metadata) or transformBatch(events, metadata)";
    return hasE ? "transformEvent" : "transformBatch";
  }

  function sizeText(bytes) {
    return bytes >= 1048576 ? (bytes / 1048576).toFixed(1) + " MB" : (bytes / 1024).toFixed(1) + " KB";
  }

  function run(inputJson, maxBytes) {
    var limitText = maxBytes % 1024 === 0 ? maxBytes / 1024 + " KB" : maxBytes + " bytes";
    var out = [];
    function keep(i, ev) {
      out.push([i, ev]);
    }
    function measure(ev) {
      var json = stringify(ev);
      var size = typeof json === "string" ? json.length : 4;
      // A UTF-16 unit is one to three bytes of UTF-8, so only in between is counting worth it.
      if (size <= maxBytes && size * 3 > maxBytes) size = utf8Length(json);
      if (size > maxBytes) {
        throw contractError("transformation output of " + sizeText(size) + " is over the " + limitText + " limit (--transform-output-max-kb)");
      }
    }
    // One stringify of the whole answer, as before the cap: when it is within a third of the
    // cap no event in it can be over (at most 3 bytes of UTF-8 per unit), so only an answer
    // that large has each of its events measured, before anything leaves QuickJS.
    function answer() {
      var json = stringify(out);
      if (json.length * 3 > maxBytes) for (var k = 0; k < out.length; k++) measure(out[k][1]);
      return json;
    }
    var items = parse(inputJson);
    var n = items.length;
    var events = [];
    var byIdentity = new NativeMap();
    var byMessageId = create(null);
    for (var k = 0; k < n; k++) {
      events[k] = items[k].event;
      if (events[k] !== null && typeof events[k] === "object") byIdentity.set(events[k], k);
      var mid = items[k].metadata && items[k].metadata.messageId;
      if (typeof mid === "string" && !(mid in byMessageId)) byMessageId[mid] = k;
    }
    // Customer code may hand metadata() a copy of the event, so fall back to its messageId.
    function sourceOf(ev, fallback) {
      if (ev !== null && typeof ev === "object") {
        var i = byIdentity.get(ev);
        if (i !== undefined) return i;
        var id = ev.messageId;
        if (typeof id === "string" && id in byMessageId) return byMessageId[id];
      }
      return fallback;
    }

    if (fe !== undefined) {
      var collect = function (i, r) {
        if (r === null || r === undefined) return;
        if (isArray(r)) {
          for (var j = 0; j < r.length; j++) {
            if (!isEvent(r[j])) throw contractError("transformEvent must return an object, an array of objects, null or undefined (got an array containing " + typeName(r[j]) + ")");
            keep(i, r[j]);
          }
          return;
        }
        if (!isEvent(r)) throw contractError("transformEvent must return an object, an array of objects, null or undefined (got " + typeName(r) + ")");
        keep(i, r);
      };
      var next = 0;
      // Synchronous unless the customer's function is async; then each event waits for the previous one.
      var step = function () {
        while (next < n) {
          var i = next++;
          var metadata = (function (own) {
            return function metadata(ev) { return items[sourceOf(ev, own)].metadata; };
          })(i);
          var r = fe(events[i], metadata);
          if (r instanceof NativePromise) {
            return r.then(function (v) { collect(i, v); return step(); });
          }
          collect(i, r);
        }
        return answer();
      };
      return step();
    }

    var batchMetadata = function metadata(ev) {
      var i = sourceOf(ev, -1);
      return i >= 0 ? items[i].metadata : {};
    };
    var finish = function (r) {
      if (!isArray(r)) throw contractError("transformBatch must return an array of objects (got " + typeName(r) + ")");
      for (var j = 0; j < r.length; j++) {
        if (!isEvent(r[j])) throw contractError("transformBatch must return an array of objects (got an array containing " + typeName(r[j]) + ")");
        keep(sourceOf(r[j], j < n ? j : 0), r[j]);
      }
      return answer();
    };
    var result = fb(events, batchMetadata);
    return result instanceof NativePromise ? result.then(finish) : finish(result);
  }

  return { run: run, describe: describe, fmtError: fmtError };
})
