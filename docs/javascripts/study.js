// The study site's behaviour, all in the reader's browser: nothing is sent anywhere.
// - progress: "done" and a confidence per question, kept in localStorage; ticks in the
//   navigation, a progress bar per topic;
// - the question table: filter by topic, difficulty, tag, graded, done; sort by any column;
// - the mock interview: a random set of prompts against the clock, answers revealed at the end,
//   self-scored against each answer's rubric;
// - answers: show or hide every code cell at once.
(() => {
  "use strict";

  const KEY = "qb-progress-v1";
  const configEl = document.getElementById("__config");
  const siteBase = new URL(
    (configEl ? JSON.parse(configEl.textContent).base : ".") + "/", location.href);
  const at = (path) => new URL(path, siteBase);

  // -- progress, in localStorage ------------------------------------------------------------
  const progress = {
    all() {
      try { return JSON.parse(localStorage.getItem(KEY)) || {}; } catch (e) { return {}; }
    },
    get(id) { return this.all()[id] || {}; },
    set(id, change) {
      const all = this.all();
      all[id] = Object.assign({}, all[id], change, {at: new Date().toISOString()});
      try { localStorage.setItem(KEY, JSON.stringify(all)); } catch (e) { /* private mode */ }
    },
    done(id) { return Boolean(this.get(id).done); },
  };

  let bankRequest = null;
  const bank = () => (bankRequest = bankRequest ||
    fetch(at("assets/questions.json")).then((r) => r.json()));

  function markNavigation(questions) {
    const byPath = new Map(questions.map((q) => [at(q.url).pathname, q]));
    for (const link of document.querySelectorAll(".md-nav__link[href]")) {
      const url = new URL(link.getAttribute("href"), location.href);
      const q = byPath.get(url.pathname.replace(/index\.html$/, ""));
      if (!q) continue;
      const done = progress.done(q.id);
      link.classList.toggle("qb-nav-done", done);
      let tick = link.querySelector(".qb-tick");
      if (done && !tick) {
        tick = document.createElement("span");
        tick.className = "qb-tick";
        tick.innerHTML = '<span aria-hidden="true">✓</span><span class="qb-sr-only"> (done)</span>';
        link.appendChild(tick);
      } else if (!done && tick) {
        tick.remove();
      }
    }
  }

  function fillProgressBars(questions) {
    for (const box of document.querySelectorAll(".qb-progress[data-topic]")) {
      const items = questions.filter((q) => q.topic === box.dataset.topic);
      const done = items.filter((q) => progress.done(q.id)).length;
      box.querySelector("progress").value = done;
      box.querySelector("progress").max = items.length;
      box.querySelector(".qb-progress__text").textContent = `${done} of ${items.length} done`;
    }
  }

  function refresh() {
    bank().then((questions) => {
      markNavigation(questions);
      fillProgressBars(questions);
      table.refresh();
    }).catch(() => {});
  }

  // -- a question page: done and confidence --------------------------------------------------
  function practiceWidget() {
    const box = document.querySelector(".qb-practice[data-qid]");
    if (!box) return;
    const id = box.dataset.qid;
    const done = box.querySelector(".qb-practice__done");
    const saved = box.querySelector(".qb-practice__saved");
    const state = progress.get(id);
    done.checked = Boolean(state.done);
    for (const radio of box.querySelectorAll('input[name="qb-confidence"]')) {
      radio.checked = String(state.confidence || "") === radio.value;
      radio.addEventListener("change", () => {
        progress.set(id, {confidence: Number(radio.value)});
        saved.textContent = "Saved in this browser.";
      });
    }
    done.addEventListener("change", () => {
      progress.set(id, {done: done.checked});
      saved.textContent = done.checked ? "Marked done, saved in this browser." : "Marked not done.";
      refresh();
    });
  }

  // -- answers: every code cell at once --------------------------------------------------------
  function codeToggles() {
    for (const button of document.querySelectorAll(".qb-code-toggle")) {
      const scope = button.closest(".qb-answer") || document.querySelector("article") || document;
      button.addEventListener("click", () => {
        const show = button.getAttribute("aria-pressed") !== "true";
        for (const cell of scope.querySelectorAll("details.qb-code")) cell.open = show;
        button.setAttribute("aria-pressed", String(show));
        button.textContent = show ? "Hide all code" : "Show all code";
      });
    }
  }

  // -- the question table ---------------------------------------------------------------------
  const table = {
    el: null,
    init() {
      this.el = document.querySelector(".qb-question-table");
      if (!this.el) return;
      this.form = document.querySelector(".qb-filters");
      const params = new URLSearchParams(location.search);
      for (const select of this.form.querySelectorAll("select[data-filter]")) {
        if (params.has(select.name)) select.value = params.get(select.name);
        select.addEventListener("change", () => this.refresh(true));
      }
      this.form.addEventListener("reset", () => setTimeout(() => this.refresh(true)));
      for (const button of this.el.querySelectorAll("th button[data-sort]")) {
        button.addEventListener("click", () => this.sort(button));
      }
      this.refresh();
    },
    refresh(remember) {
      if (!this.el) return;
      const want = {};
      for (const select of this.form.querySelectorAll("select[data-filter]")) {
        if (select.value) want[select.name] = select.value;
      }
      let shown = 0;
      const rows = [...this.el.tBodies[0].rows];
      for (const row of rows) {
        const done = progress.done(row.dataset.qid);
        row.dataset.done = done ? "yes" : "no";
        row.querySelector(".qb-done-cell").textContent = done ? "yes" : "no";
        const keep = Object.entries(want).every(([name, value]) => name === "tag"
          ? row.dataset.tags.split(" ").includes(value) : row.dataset[name] === value);
        row.hidden = !keep;
        shown += keep ? 1 : 0;
      }
      document.querySelector(".qb-count").textContent =
        `Showing ${shown} of ${rows.length} questions.`;
      if (remember) {
        const query = new URLSearchParams(want).toString();
        history.replaceState(null, "", location.pathname + (query ? "?" + query : ""));
      }
    },
    sort(button) {
      const th = button.closest("th");
      const column = [...th.parentElement.children].indexOf(th);
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      for (const other of th.parentElement.children) other.setAttribute("aria-sort", "none");
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const key = (row) => {
        const cell = row.cells[column];
        return cell.dataset.rank !== undefined ? Number(cell.dataset.rank) : cell.textContent.trim();
      };
      const body = this.el.tBodies[0];
      const rows = [...body.rows].sort((a, b) => {
        const x = key(a), y = key(b);
        const order = typeof x === "number" ? x - y : x.localeCompare(y);
        return (ascending ? order : -order) || a.dataset.qid.localeCompare(b.dataset.qid);
      });
      rows.forEach((row) => body.appendChild(row));
    },
  };

  // -- the mock interview -------------------------------------------------------------------------
  const mock = {
    init() {
      this.root = document.querySelector(".qb-mock");
      if (!this.root) return;
      this.setup = this.root.querySelector(".qb-mock__setup");
      this.run = this.root.querySelector(".qb-mock__run");
      this.review = this.root.querySelector(".qb-mock__review");
      this.setup.addEventListener("submit", (e) => { e.preventDefault(); this.start(); });
      this.root.addEventListener("click", (e) => {
        const action = e.target.closest("[data-mock]");
        if (action) this[action.dataset.mock]();
      });
      this.root.addEventListener("change", (e) => {
        if (e.target.matches(".qb-rubric input")) this.score();
      });
    },
    async start() {
      const form = new FormData(this.setup);
      const topics = form.getAll("topic");
      const count = Math.max(1, Number(form.get("count")) || 3);
      this.seconds = Number(form.get("minutes")) * 60;
      const questions = (await bank()).filter((q) => topics.includes(q.topic));
      if (!questions.length) {
        this.setup.querySelector("fieldset legend").textContent = "Topics: pick at least one";
        return;
      }
      for (let i = questions.length - 1; i > 0; i--) {  // Fisher-Yates shuffle
        const j = Math.floor(Math.random() * (i + 1));
        [questions[i], questions[j]] = [questions[j], questions[i]];
      }
      this.set = questions.slice(0, count);
      this.notes = this.set.map(() => "");
      this.pages = await Promise.all(this.set.map((q) => fetch(at(q.url)).then((r) => r.text())
        .then((text) => new DOMParser().parseFromString(text, "text/html"))));
      this.index = 0;
      this.setup.hidden = true;
      this.review.hidden = true;
      this.run.hidden = false;
      this.deadline = Date.now() + this.seconds * 1000;
      clearInterval(this.timer);
      this.timer = setInterval(() => this.tick(), 1000);
      this.tick();
      this.show();
    },
    tick() {
      const left = Math.max(0, Math.round((this.deadline - Date.now()) / 1000));
      const clock = this.run.querySelector(".qb-mock__clock");
      clock.textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")} left`;
      if (left === 0) this.finish();
    },
    keepNotes() {
      this.notes[this.index] = this.run.querySelector(".qb-mock__notes").value;
    },
    show() {
      const q = this.set[this.index];
      const prompt = this.pages[this.index].querySelector(".qb-prompt");
      const box = this.run.querySelector(".qb-mock__prompt");
      box.innerHTML = "";
      const clone = prompt ? prompt.cloneNode(true) : document.createTextNode(q.title);
      if (prompt) {
        clone.querySelectorAll("[id]").forEach((el) => el.removeAttribute("id"));
        clone.querySelectorAll("h1").forEach((h) => {
          const h2 = document.createElement("h2");
          h2.innerHTML = h.innerHTML;
          h.replaceWith(h2);
        });
        clone.querySelectorAll(".headerlink").forEach((a) => a.remove());
        // links inside the prompt are relative to the question's page
        clone.querySelectorAll("a[href]").forEach((a) => {
          a.href = new URL(a.getAttribute("href"), at(q.url)).href;
        });
      }
      box.appendChild(clone);
      this.run.querySelector(".qb-mock__position").textContent =
        `Question ${this.index + 1} of ${this.set.length} · about ${q.minutes} minutes`;
      this.run.querySelector(".qb-mock__notes").value = this.notes[this.index];
      this.run.querySelector('[data-mock="previous"]').disabled = this.index === 0;
      this.run.querySelector('[data-mock="next"]').disabled = this.index === this.set.length - 1;
      if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise([box]).catch(() => {});
      box.querySelector("h2") && box.querySelector("h2").setAttribute("tabindex", "-1");
    },
    previous() { this.keepNotes(); this.index = Math.max(0, this.index - 1); this.show(); },
    next() { this.keepNotes(); this.index = Math.min(this.set.length - 1, this.index + 1); this.show(); },
    finish() {
      if (this.run.hidden) return;
      this.keepNotes();
      clearInterval(this.timer);
      this.run.hidden = true;
      this.review.hidden = false;
      const list = this.review.querySelector(".qb-mock__answers");
      list.innerHTML = "";
      this.set.forEach((q, i) => {
        const item = document.createElement("article");
        item.className = "qb-mock__answer";
        const short = this.pages[i].querySelector(".qb-short");
        const rubric = q.rubric.length ? q.rubric
          : ["My answer reached the reference answer's headline numbers and reasoning " +
             "(this answer has no rubric yet)."];
        item.innerHTML =
          `<h3>${q.id} · <a href="${at(q.url).href}#answer">${q.title}</a></h3>` +
          (this.notes[i] ? '<p class="qb-mock__your-notes"><strong>Your notes:</strong> </p>' : "") +
          (short ? '<div class="qb-mock__short"></div>'
            : `<p><a href="${at(q.url).href}#answer">Read the reference answer</a>.</p>`) +
          '<fieldset class="qb-rubric"><legend>Rubric: tick what your answer contained</legend>' +
          rubric.map((r) => `<label><input type="checkbox"> <span>${r}</span></label>`).join("") +
          "</fieldset>";
        if (this.notes[i]) item.querySelector(".qb-mock__your-notes").append(this.notes[i]);
        if (short) {
          const copy = short.cloneNode(true);
          copy.querySelectorAll("[id]").forEach((el) => el.removeAttribute("id"));
          item.querySelector(".qb-mock__short").appendChild(copy);
        }
        list.appendChild(item);
      });
      this.score();
      if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise([list]).catch(() => {});
      this.review.querySelector("h2").setAttribute("tabindex", "-1");
      this.review.querySelector("h2").focus();
    },
    score() {
      const boxes = [...this.review.querySelectorAll(".qb-rubric input")];
      const got = boxes.filter((b) => b.checked).length;
      const pct = boxes.length ? Math.round((100 * got) / boxes.length) : 0;
      this.review.querySelector(".qb-mock__score").textContent =
        `Score: ${got} of ${boxes.length} rubric points (${pct}%).`;
    },
    again() {
      this.review.hidden = true;
      this.setup.hidden = false;
    },
  };

  // -- a graded exercise: the starter file in an editor, kept as a draft, downloadable -----------
  function exercise() {
    const box = document.querySelector(".qb-exercise");
    if (!box) return;
    const editor = box.querySelector("textarea.qb-editor");
    const saved = box.querySelector(".qb-exercise__saved");
    const key = "qb-draft-" + editor.id;
    try {
      const draft = localStorage.getItem(key);
      if (draft !== null) editor.value = draft;
    } catch (e) { /* private mode */ }
    editor.addEventListener("input", () => {
      try { localStorage.setItem(key, editor.value); } catch (e) { /* private mode */ }
    });
    editor.addEventListener("keydown", (e) => {  // Tab indents; Escape then Tab leaves the editor
      if (e.key !== "Tab" || e.shiftKey || editor.dataset.escaped) { delete editor.dataset.escaped; return; }
      e.preventDefault();
      editor.setRangeText("    ", editor.selectionStart, editor.selectionEnd, "end");
      editor.dispatchEvent(new Event("input"));
    });
    editor.addEventListener("keyup", (e) => { if (e.key === "Escape") editor.dataset.escaped = "1"; });
    box.addEventListener("click", (e) => {
      const action = e.target.closest("[data-exercise]");
      if (!action) return;
      if (action.dataset.exercise === "download") {
        const link = document.createElement("a");
        link.href = URL.createObjectURL(new Blob([editor.value], {type: "text/x-python"}));
        link.download = box.dataset.filename;
        document.body.appendChild(link);
        link.click();
        link.remove();
        saved.textContent = `Saved as ${box.dataset.filename}: grade it with the command above.`;
      } else if (action.dataset.exercise === "check") {
        check(action);
      } else if (action.dataset.exercise === "reset") {
        editor.value = editor.defaultValue;
        editor.dispatchEvent(new Event("input"));
        saved.textContent = "Back to the starter file.";
      }
    });
  }

  // -- the in-browser grader: a Web Worker running Pyodide, stopped at its time limit -------------
  let grader = null;
  function check(button) {
    const box = button.closest(".qb-exercise");
    const out = box.querySelector(".qb-exercise__report");
    const limit = Number(button.dataset.limit || 180);
    const started = Date.now();
    out.hidden = false;
    out.textContent = "Starting…";
    button.disabled = true;
    grader = grader || new Worker(at("javascripts/grader/worker.js"));
    const worker = grader;
    const stop = setTimeout(() => {
      worker.terminate();
      grader = null;
      button.disabled = false;
      out.dataset.exit = "timeout";
      out.textContent = `Stopped after ${limit} s: the check took too long (an endless loop?).`;
    }, limit * 1000);
    worker.onmessage = (e) => {
      if (e.data.progress) { out.textContent = e.data.progress; return; }
      clearTimeout(stop);
      button.disabled = false;
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      out.dataset.exit = e.data.error ? "error" : String(e.data.exit);
      out.dataset.seconds = seconds;
      out.textContent = e.data.error ? "The grader could not run: " + e.data.error
        : `${e.data.report}\n(exit status ${e.data.exit}; ${seconds} s in this browser)`;
    };
    worker.postMessage({base: siteBase.href, exercise: button.dataset.grader,
                        source: box.querySelector("textarea.qb-editor").value,
                        filename: box.dataset.filename});
  }

  // -- accessibility touches on Material's own components ------------------------------------------
  // The search overlay is a dialog: give it a name. Tables that Material wraps to scroll sideways
  // are reachable by keyboard.
  function accessible() {
    const search = document.querySelector(".md-search[role=dialog]");
    if (search && !search.hasAttribute("aria-label")) search.setAttribute("aria-label", "Search");
    const focusable = (root) => root.querySelectorAll && root.querySelectorAll(".md-typeset__scrollwrap:not([tabindex])")
      .forEach((el) => el.setAttribute("tabindex", "0"));
    focusable(document);
    const content = document.querySelector(".md-content");
    if (content) new MutationObserver(() => focusable(content)).observe(content, {childList: true, subtree: true});
  }

  // Material loads this script at the end of <body>: the page is parsed.
  accessible();
  practiceWidget();
  exercise();
  codeToggles();
  table.init();
  mock.init();
  refresh();
  window.addEventListener("storage", (e) => e.key === KEY && refresh());
})();
