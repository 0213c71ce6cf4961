// dmprof record's hook for node (NODE_OPTIONS=--require this file): it
// tells the recorder (libdmprof-recorder.so, preloaded) which node runs
// the program, and asks for the dump before teardown when the event loop
// has ended (or process.exit() was called), before node disposes of its
// isolate and frees the program's objects.  It asks through
// fs.accessSync() on paths under /dev/null, which the recorder answers
// (src/recorder/rec_node.c; a worker thread's are ignored there); without
// the recorder they fail, and nothing happens.  The program's own
// listeners of 'exit' run after this one.
'use strict';
(function () {
  const fs = require('fs');
  const ask = (what) => {
    try {
      fs.accessSync('/dev/null/dmprof-recorder/' + what);
    } catch (e) {
    }
  };
  ask('runtime node ' + process.version);
  process.prependListener('exit', () => ask('before-teardown'));
})();
