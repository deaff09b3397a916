// The in-browser grader: Pyodide (served by this site) running the graders package on the
// reader's file. A Web Worker is the sandbox: the page terminates it at its time limit.
/* global loadPyodide */
"use strict";

let python = null;

async function boot(base) {
  const get = async (path) => new Uint8Array(await (await fetch(base + path)).arrayBuffer());
  importScripts(base + "assets/pyodide/pyodide.js");
  const py = await loadPyodide({indexURL: base + "assets/pyodide/"});
  const manifest = await (await fetch(base + "assets/pyodide/manifest.json")).json();
  for (const wheel of manifest.wheels) py.unpackArchive(await get("assets/pyodide/" + wheel), "wheel");
  py.unpackArchive(await get("assets/pyodide/bank.zip"), "zip", {extractDir: "/home/pyodide/bank"});
  py.FS.writeFile("/home/pyodide/bank/browser_sandbox.py",
    await (await fetch(base + "javascripts/grader/sandbox.py")).text());
  py.runPython("import sys; sys.path.insert(0, '/home/pyodide/bank'); import browser_sandbox");
  return py;
}

self.onmessage = async (event) => {
  const {base, exercise, source, filename} = event.data;
  try {
    if (!python) {
      self.postMessage({progress: "Loading Python in your browser (once per page)…"});
      python = boot(base);
    }
    const py = await python;
    self.postMessage({progress: `Running the ${exercise} properties…`});
    py.globals.set("EXERCISE", exercise);
    py.globals.set("SOURCE", source);
    py.globals.set("FILENAME", filename);
    const result = py.runPython("browser_sandbox.check(EXERCISE, SOURCE, FILENAME)");
    const [report, status] = result.toJs();
    result.destroy();
    self.postMessage({report, exit: status});
  } catch (error) {
    self.postMessage({error: String(error)});
  }
};
