// Page-side checks of the browser tests (tests/interop/browser) and the
// browser benchmark. Every check is an async function returning a result
// {name, ok, detail} (or a list of them); the driver calls them with
// Runtime.evaluate and prints PASS/FAIL.
// Bodies are compared byte by byte:
//   GET /<N> with no such file: byte i is ALPHABET[i % 64] (synthetic);
//   range.bin: byte i is (i * 151 + 17) % 256 (pages.py's file_bytes).

"use strict";

const ALPHABET = new TextEncoder().encode(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");

// Keep every resource timing entry of a page (the default buffer holds 250).
performance.setResourceTimingBufferSize(100000);

function result(name, ok, detail) {
  return {name, ok: !!ok, detail: String(detail)};
}

function describeError(e) {
  return e && e.name ? e.name + ": " + e.message : String(e);
}

function fileByte(i) {
  return (i * 151 + 17) % 256;
}

// The index of the first byte of `chunk` (which starts at body offset
// `offset`) that differs from byteAt(offset + index), or -1.
function firstMismatch(chunk, offset, byteAt) {
  for (let j = 0; j < chunk.length; j++) {
    if (chunk[j] !== byteAt(offset + j)) return j;
  }
  return -1;
}

function syntheticByte(i) {
  return ALPHABET[i % 64];
}

// Reads `response`'s body chunk by chunk, comparing with byteAt() from
// `start` on; "" when it has exactly `length` such bytes, else what differs.
// `onChunk(bytesSoFar)` is awaited after each chunk (it may pause reading).
async function compareBody(response, length, byteAt, start = 0, onChunk = null) {
  const reader = response.body.getReader();
  let received = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    const bad = firstMismatch(value, start + received, byteAt);
    if (bad >= 0) {
      reader.cancel();
      return "byte " + (received + bad) + " is " + value[bad] + ", expected " +
             byteAt(start + received + bad);
    }
    received += value.length;
    if (received > length) {
      reader.cancel();
      return "more than " + length + " bytes";
    }
    if (onChunk) await onChunk(received);
  }
  return received === length ? "" : received + " bytes, expected " + length;
}

// GET url: status 200 and the `length` synthetic bytes. Never cached.
async function fetchSynthetic(url, length) {
  try {
    const response = await fetch(url, {cache: "no-store"});
    if (response.status !== 200) return "status " + response.status + ", expected 200";
    return await compareBody(response, length, syntheticByte);
  } catch (e) {
    return describeError(e);
  }
}

// GET <prefix><N> for each N: the N synthetic bytes, one after the other.
async function checkSizes(prefix, sizes) {
  const results = [];
  for (const n of sizes) {
    const problem = await fetchSynthetic(prefix + n, n);
    results.push(result("GET " + prefix + n, !problem,
                        problem || "200 and the " + n + " synthetic bytes"));
  }
  return results;
}

// `count` GETs at once of <prefix><base + i>, each byte-exact.
async function checkParallel(prefix, count, base) {
  const started = performance.now();
  const problems = await Promise.all(
      Array.from({length: count}, (_, i) => fetchSynthetic(prefix + (base + i), base + i)));
  const failed = problems.map((p, i) => p ? prefix + (base + i) + ": " + p : "").filter(p => p);
  return result(count + " parallel GETs", failed.length === 0,
                failed.length ? failed.length + " failed, first " + failed[0]
                              : "all " + count + " byte-exact in " +
                                Math.round(performance.now() - started) + " ms");
}

async function checkNotFound(path) {
  try {
    const response = await fetch(path, {cache: "no-store"});
    await response.arrayBuffer();
    return result("GET " + path + " (missing)", response.status === 404,
                  "status " + response.status + ", expected 404");
  } catch (e) {
    return result("GET " + path + " (missing)", false, describeError(e));
  }
}

// On subresources.html, once it has loaded: every image decoded at its
// size, every script ran, the stylesheet applied, and the resource timing
// entries name exactly the paths of `shape.paths` (a request the browser
// retried on a new connection has two entries).
async function checkSubresources(shape) {
  const problems = [];
  for (let i = 0; i < shape.images.length; i++) {
    const img = document.getElementById("img" + i);
    try {
      await img.decode();
    } catch (e) {
      problems.push("img" + i + " did not decode");
      continue;
    }
    const [w, h] = shape.images[i];
    if (img.naturalWidth !== w || img.naturalHeight !== h) {
      problems.push("img" + i + " is " + img.naturalWidth + "x" + img.naturalHeight +
                    ", expected " + w + "x" + h);
    }
  }
  const ran = Object.keys(window.scriptsRan || {}).length;
  if (ran !== shape.scripts) problems.push(ran + " of " + shape.scripts + " scripts ran");
  const style = getComputedStyle(document.getElementById("probe"));
  if (style.width !== shape.probeWidth + "px" || style.color !== shape.probeColor) {
    problems.push("#probe is " + style.width + " " + style.color + ", expected " +
                  shape.probeWidth + "px " + shape.probeColor);
  }
  const entries = performance.getEntriesByType("resource");
  const paths = new Set(entries.map(e => new URL(e.name).pathname));
  const loads = paths.size;
  const missing = shape.paths.filter(p => !paths.has(p));
  const unexpected = [...paths].filter(p => !shape.paths.includes(p));
  if (missing.length || unexpected.length) {
    problems.push("resource entries lack " + (missing.slice(0, 5).join(", ") || "nothing") +
                  " and have unexpected " + (unexpected.slice(0, 5).join(", ") || "nothing"));
  }
  const repeated = entries.length > loads ? " (" + (entries.length - loads) + " repeated)" : "";
  return result("page with " + shape.subresources + " sub-resources", problems.length === 0,
                problems.length ? problems.slice(0, 5).join("; ")
                                : shape.images.length + " images decoded, " + ran +
                                  " scripts ran, styles applied, " + loads + " URLs loaded" +
                                  repeated);
}

// One ranged GET of range.bin (`total` bytes): `status`, and for 206 the
// content-range and the bytes from `first` to `last`.
async function rangedFetch(path, total, header, status, first, last) {
  const name = "range: " + header;
  try {
    const response = await fetch(path, {cache: "no-store", headers: {range: header}});
    if (response.status !== status) {
      await response.arrayBuffer();
      return result(name, false, "status " + response.status + ", expected " + status);
    }
    if (status !== 206) {
      await response.arrayBuffer();
      const range = response.headers.get("content-range");
      return result(name, range === "bytes */" + total,
                    status + ", content-range " + range + " (expected bytes */" + total + ")");
    }
    const expectedRange = "bytes " + first + "-" + last + "/" + total;
    const range = response.headers.get("content-range");
    if (range !== expectedRange) {
      await response.arrayBuffer();
      return result(name, false, "content-range " + range + ", expected " + expectedRange);
    }
    const problem = await compareBody(response, last - first + 1, fileByte, first);
    return result(name, !problem, problem || "206, " + range + ", bytes exact");
  } catch (e) {
    return result(name, false, describeError(e));
  }
}

async function checkRanges(path, total) {
  return [
    await rangedFetch(path, total, "bytes=1000-1999", 206, 1000, 1999),
    await rangedFetch(path, total, "bytes=" + (total - 500) + "-", 206, total - 500, total - 1),
    await rangedFetch(path, total, "bytes=-300", 206, total - 300, total - 1),
    await rangedFetch(path, total, "bytes=" + total + "-", 416),
  ];
}

// Conditional GETs written by the page (which the browser passes through
// untouched, 304 included): the validators of a first answer get 304, a
// different entity tag gets the whole body.
async function checkConditional(path) {
  const name = "conditional GET " + path;
  try {
    const first = await fetch(path, {cache: "no-store"});
    const body = await first.text();
    const etag = first.headers.get("etag");
    const modified = first.headers.get("last-modified");
    const results = [];
    if (!etag) {
      results.push(result(name + " if-none-match", false, "no etag in the 200"));
    } else {
      const again = await fetch(path, {cache: "no-store", headers: {"if-none-match": etag}});
      const rest = await again.text();
      results.push(result(name + " if-none-match", again.status === 304 && rest === "",
                          "status " + again.status + " with " + rest.length +
                          " body bytes, expected 304 and none"));
      const other = await fetch(path, {cache: "no-store",
                                       headers: {"if-none-match": '"not-' + etag.replace(/"/g, "") + '"'}});
      const full = await other.text();
      results.push(result(name + " other etag", other.status === 200 && full === body,
                          "status " + other.status + ", expected 200 and the whole body"));
    }
    if (!modified) {
      results.push(result(name + " if-modified-since", false, "no last-modified in the 200"));
    } else {
      const again = await fetch(path, {cache: "no-store", headers: {"if-modified-since": modified}});
      await again.text();
      results.push(result(name + " if-modified-since", again.status === 304,
                          "status " + again.status + ", expected 304"));
    }
    return results;
  } catch (e) {
    return [result(name, false, describeError(e))];
  }
}

// The browser's own revalidation: a cached fetch, then fetch(cache:
// "no-cache"), which must revalidate. The page sees the cached 200 either
// way; whether a 304 came back is in the resource timing entry's
// responseStatus (where Chromium has it) and the driver's Network events.
async function browserRevalidate(path) {
  const first = await fetch(path);
  const body = await first.text();
  const second = await fetch(path, {cache: "no-cache"});
  const again = await second.text();
  const entries = performance.getEntriesByName(new URL(path, location.href).href);
  const last = entries[entries.length - 1];
  return {
    status: second.status,
    same: again === body,
    etag: first.headers.get("etag"),
    responseStatus: last && "responseStatus" in last ? last.responseStatus : null,
    transferSize: last ? last.transferSize : null,
  };
}

// GET each path: its content-type (without parameters) is the type given.
async function checkContentTypes(types) {
  const results = [];
  for (const [path, type] of Object.entries(types)) {
    try {
      const response = await fetch(path, {cache: "no-store"});
      await response.arrayBuffer();
      const header = response.headers.get("content-type");
      const got = header ? header.split(";")[0].trim().toLowerCase() : null;
      results.push(result("content-type " + path, response.status === 200 && got === type,
                          "status " + response.status + ", content-type " + header +
                          ", expected " + type));
    } catch (e) {
      results.push(result("content-type " + path, false, describeError(e)));
    }
  }
  return results;
}

// GET `big` (synthetic, `bigLength` bytes), abort after its first chunk,
// then GET `small` (`smallLength` synthetic bytes): it must succeed.
async function checkAbort(big, bigLength, small, smallLength) {
  const controller = new AbortController();
  let aborted = "no";
  try {
    const response = await fetch(big, {cache: "no-store", signal: controller.signal});
    const reader = response.body.getReader();
    const {value} = await reader.read();
    if (!value || firstMismatch(value, 0, syntheticByte) >= 0) {
      return result("abort mid-body", false, "the first chunk of " + big + " is wrong");
    }
    controller.abort();
    await reader.read();
  } catch (e) {
    aborted = e.name === "AbortError" ? "yes" : describeError(e);
  }
  if (aborted !== "yes") return result("abort mid-body", false, "abort: " + aborted);
  const problem = await fetchSynthetic(small, smallLength);
  return result("abort mid-body, then GET " + small, !problem,
                problem || big + " aborted after its first chunk; " + small + " byte-exact");
}

// Every navigation and resource timing entry of this page says h3.
function protocolsSeen() {
  const entries = performance.getEntriesByType("navigation")
                      .concat(performance.getEntriesByType("resource"));
  const other = entries.filter(e => e.nextHopProtocol !== "h3")
                    .map(e => e.name + " over '" + e.nextHopProtocol + "'");
  return {entries: entries.length, other};
}

// The drain check, in three steps the driver interleaves with SIGTERM:
// startHeldFetch() reads the first chunk of `url` and then holds further
// reading (so the request is surely in flight), heldFetchState() says
// "waiting", "started" (under way, held) or "done" (it ended before its
// first chunk was read), releaseHeldFetch() lets it read on and resolves to
// the byte-exact verdict ("" when exact).
let heldFetch = {started: false, done: false, release: null, result: null};

function startHeldFetch(url, length) {
  const gate = new Promise(resolve => { heldFetch.release = resolve; });
  heldFetch.started = false;
  heldFetch.done = false;
  heldFetch.result = (async () => {
    try {
      const response = await fetch(url, {cache: "no-store"});
      if (response.status !== 200) return "status " + response.status + ", expected 200";
      return await compareBody(response, length, syntheticByte, 0, async () => {
        if (!heldFetch.started) {
          heldFetch.started = true;
          await gate;
        }
      });
    } catch (e) {
      return describeError(e);
    } finally {
      heldFetch.done = true;
    }
  })();
  return true;
}

function heldFetchState() {
  return heldFetch.started ? "started" : heldFetch.done ? "done" : "waiting";
}

async function releaseHeldFetch() {
  heldFetch.release();
  return await heldFetch.result;
}

// The benchmark's download: GET `path` whole (no byte checks, which would
// slow the reader), its size, and its resource timing entry's figures.
async function timedDownload(path) {
  const response = await fetch(path, {cache: "no-store"});
  const bytes = (await response.arrayBuffer()).byteLength;
  const entries = performance.getEntriesByName(new URL(path, location.href).href);
  const e = entries[entries.length - 1];
  return {status: response.status, bytes, startTime: e.startTime, responseEnd: e.responseEnd,
          protocol: e.nextHopProtocol};
}

// The benchmark's page figures, once the load event has ended: the
// navigation entry's, and the end of the last sub-resource.
async function navigationTiming() {
  let nav = performance.getEntriesByType("navigation")[0];
  while (!nav || nav.loadEventEnd === 0) {
    await new Promise(resolve => setTimeout(resolve, 10));
    nav = performance.getEntriesByType("navigation")[0];
  }
  const resources = performance.getEntriesByType("resource");
  return {
    startTime: nav.startTime,
    loadEventEnd: nav.loadEventEnd,
    lastResponseEnd: Math.max(...resources.map(r => r.responseEnd)),
    resources: resources.length,
    protocols: [...new Set([nav].concat(resources).map(e => e.nextHopProtocol))],
  };
}
