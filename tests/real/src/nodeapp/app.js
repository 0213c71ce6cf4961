// tests/real/node.sh: a node program whose memory is known to the test.
// Buffers kept by fillBuffers, strings by makeStrings (the JavaScript
// heap), Buffers made by square through Array.prototype.map, and a Map
// cache that growCache grows a round at a time, rounds apart on the
// event loop.  Each Buffer.alloc(n, fill) is one block of n bytes outside
// the JavaScript heap (its backing store), which the test counts.
'use strict';

const kept = [];
function fillBuffers(n, size) {
  for (let i = 0; i < n; i++)
    kept.push(Buffer.alloc(size, i & 0xff));
}

const words = [];
function makeStrings(n) {
  for (let i = 0; i < n; i++)
    words.push(['word', i, 'x'.repeat(32)].join('-'));
}

const cache = new Map();
function growCache(round, n) {
  for (let i = 0; i < n; i++)
    cache.set(round * n + i, Buffer.alloc(1024, i & 0xff));
}

function square(x) {
  return Buffer.alloc(2048, x & 0xff);
}

const rounds = Number(process.argv[2] || 8);
const perRound = Number(process.argv[3] || 4000);
let round = 0;
let squares = [];
// (Reachable to the end, as a server's state is: else, once the last
// round has run, nothing refers to them, and a collection before the
// exit event may free them.)
globalThis.held = { kept, words, cache, get squares() { return squares; } };

function step() {
  growCache(round, perRound);
  if (++round < rounds)
    setTimeout(step, 150);
  else
    console.log(kept.length, words.length, squares.length, cache.size);
}

fillBuffers(2000, 4096);
makeStrings(20000);
squares = Array.from({ length: 1000 }, (_, i) => i).map(square);
setTimeout(step, 150);
