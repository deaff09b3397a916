// The study site's behaviour, all in the reader's browser: nothing is sent anywhere.
// - progress: "done" and a confidence per question, kept in localStorage; ticks in the
//   navigation, a progress bar per topic; export and import as a file;
// - the review queue: a Leitner rule over the rated questions (see REVIEW_DAYS), due today on
//   the home page;
// - the question table: filter by topic, difficulty, tag, graded, done, confidence, due; sort;
// - the mock interview: a spoken or a coding round, questions drawn to fit the time budget,
//   answers revealed at the end, self-scored against each rubric's points (the common wrong
//   turn is a warning, never a point), results saved, listed and fed into the review queue;
// - the numbers drill: a guess at a claim's number, scored on its ratio to the answer;
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

  // -- the review queue: a Leitner rule ------------------------------------------------------
  // Box 1 is reviewed the next day, box 2 in 3 days, box 3 in a week, then 14, 30, 60 days.
  // A rating puts a question in a box: shaky in box 1, getting there in box 2, could teach it
  // in box 3, or one box up when it was already there (or higher) and due: each success spaces
  // it further. A rating is the review: the question leaves today's queue with its next date.
  const REVIEW_DAYS = [1, 3, 7, 14, 30, 60];
  const CONFIDENCE = {1: "shaky", 2: "getting there", 3: "could teach it"};
  const day = (date) => {  // the reader's local calendar day, YYYY-MM-DD
    const d = date || new Date();
    return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
  };
  const addDays = (iso, n) => {
    const [y, m, d] = iso.split("-").map(Number);
    return day(new Date(y, m - 1, d + n));
  };
  const review = {
    rate(id, confidence) {
      const before = progress.get(id);
      const today = day();
      const due = before.due && before.due <= today;
      let box = confidence;  // 1, 2 or 3
      if (confidence === 3 && (before.box || 0) >= 3) {
        box = due ? Math.min(REVIEW_DAYS.length, before.box + 1) : before.box;
      }
      const next = addDays(today, REVIEW_DAYS[box - 1]);
      progress.set(id, {confidence, box, due: next, reviewed: today});
      return next;
    },
    isDue(state) { return Boolean(state.due) && state.due <= day(); },
    dueNow() {
      return Object.entries(progress.all()).filter(([, s]) => this.isDue(s)).map(([id]) => id).sort();
    },
    when(state) {
      if (!state.due) return "";
      return this.isDue(state) ? "due today" : `next review ${state.due}`;
    },
  };

  // -- progress as a file: every qb- key of localStorage, out and back in ----------------------
  const FILE_FORMAT = "llm-inference-bank-progress";
  const progressFile = {
    dump() {
      const keys = {};
      for (let i = 0; i < localStorage.length; i++) {
        const k = localStorage.key(i);
        if (k.startsWith("qb-")) keys[k] = localStorage.getItem(k);
      }
      return {format: FILE_FORMAT, version: 1, exported: new Date().toISOString(), keys};
    },
    load(data) {
      if (!data || data.format !== FILE_FORMAT || typeof data.keys !== "object") {
        throw new Error("not a progress file exported by this site");
      }
      for (const [k, v] of Object.entries(data.keys)) {
        if (k.startsWith("qb-") && typeof v === "string") localStorage.setItem(k, v);
      }
      return Object.keys(JSON.parse(data.keys[KEY] || "{}")).length;
    },
  };

  function reviewQueue(questions) {
    const box = document.querySelector(".qb-review");
    if (!box) return;
    const byId = new Map(questions.map((q) => [q.id, q]));
    const due = review.dueNow().filter((id) => byId.has(id));
    const rated = Object.values(progress.all()).filter((s) => s.due).length;
    box.querySelector(".qb-review__summary").textContent = due.length
      ? `Due today: ${due.length} of the ${rated} questions you have rated.`
      : rated ? `Nothing is due today (${rated} questions in the queue).`
        : "Nothing is due: rate your confidence at the end of a question page to put it in the queue.";
    const list = box.querySelector(".qb-review__due");
    list.innerHTML = "";
    for (const id of due) {
      const q = byId.get(id);
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = at(q.url).href;
      link.textContent = `${q.id} · ${q.title}`;
      item.append(link, ` (${CONFIDENCE[progress.get(id).confidence] || "rated"})`);
      list.appendChild(item);
    }
  }

  function progressFileButtons() {
    const box = document.querySelector(".qb-review");
    if (!box) return;
    const said = box.querySelector(".qb-review__saved");
    box.querySelector('[data-progress="export"]').addEventListener("click", () => {
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([JSON.stringify(progressFile.dump(), null, 1)],
                                               {type: "application/json"}));
      link.download = `inference-bank-progress-${day()}.json`;
      document.body.appendChild(link);
      link.click();
      link.remove();
      said.textContent = "Exported: the file holds everything this site keeps in this browser.";
    });
    box.querySelector('[data-progress="import"]').addEventListener("change", async (e) => {
      const file = e.target.files[0];
      if (!file) return;
      try {
        const n = progressFile.load(JSON.parse(await file.text()));
        said.textContent = `Imported the progress of ${n} questions.`;
      } catch (err) {
        said.textContent = `Not imported: ${err.message}.`;
      }
      e.target.value = "";
      refresh();
    });
  }

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
      reviewQueue(questions);
      table.refresh();
      mock.history(questions);
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
    const due = box.querySelector(".qb-practice__due");
    const showDue = () => {
      const now = progress.get(id);
      due.textContent = now.due ? (review.isDue(now) ? "Due for review today: rate it again."
        : `Next review: ${now.due}.`) : "Rate it to put it in the review queue.";
    };
    done.checked = Boolean(state.done);
    for (const radio of box.querySelectorAll('input[name="qb-confidence"]')) {
      radio.checked = String(state.confidence || "") === radio.value;
      radio.addEventListener("change", () => {
        const next = review.rate(id, Number(radio.value));
        saved.textContent = `Saved in this browser; next review ${next}.`;
        showDue();
        refresh();
      });
    }
    showDue();
    done.addEventListener("change", () => {
      progress.set(id, {done: done.checked});
      saved.textContent = done.checked ? "Marked done, saved in this browser." : "Marked not done.";
      refresh();
    });
  }

  // -- a link into the folded answer (a search hit in it) opens the answer -----------------------
  function openLinkedAnswer() {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id && document.getElementById(id);
    const answer = target && target.closest("details.qb-answer");
    if (!answer) return;
    answer.open = true;
    (target.closest("h2, h3, h4") || target).scrollIntoView();
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
        const state = progress.get(row.dataset.qid);
        const done = Boolean(state.done);
        row.dataset.done = done ? "yes" : "no";
        row.querySelector(".qb-done-cell").textContent = done ? "yes" : "no";
        row.dataset.confidence = String(state.confidence || 0);
        const confidence = row.querySelector(".qb-confidence-cell");
        confidence.textContent = CONFIDENCE[state.confidence] || "not rated";
        confidence.dataset.rank = row.dataset.confidence;
        row.dataset.due = !state.due ? "none" : review.isDue(state) ? "now" : "later";
        row.querySelector(".qb-due-cell").textContent = !state.due ? ""
          : review.isDue(state) ? `${state.due} (due)` : state.due;
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
  const MOCK_KEY = "qb-mock-v1";  // the saved results, newest last
  const mock = {
    init() {
      this.root = document.querySelector(".qb-mock");
      if (!this.root) return;
      this.setup = this.root.querySelector(".qb-mock__setup");
      this.run = this.root.querySelector(".qb-mock__run");
      this.review = this.root.querySelector(".qb-mock__review");
      this.past = this.root.querySelector(".qb-mock__history");
      this.setup.addEventListener("submit", (e) => { e.preventDefault(); this.start(); });
      this.setup.addEventListener("change", () => this.showTopics());
      this.root.addEventListener("click", (e) => {
        const action = e.target.closest("[data-mock]");
        if (action) this[action.dataset.mock]();
      });
      this.root.addEventListener("change", (e) => {
        if (e.target.matches(".qb-rubric input, .qb-wrong-turn input")) this.score();
      });
      this.showTopics();
    },
    showTopics() {
      const coding = new FormData(this.setup).get("round") === "coding";
      this.setup.querySelector(".qb-mock__topics").hidden = coding;
    },
    saved() {
      try { return JSON.parse(localStorage.getItem(MOCK_KEY)) || []; } catch (e) { return []; }
    },
    history() {
      if (!this.root) return;
      const results = this.saved();
      const table = this.past.querySelector(".qb-mock__results");
      this.past.querySelector(".qb-mock__none").hidden = results.length > 0;
      table.hidden = results.length === 0;
      const body = table.tBodies[0];
      body.innerHTML = "";
      for (const r of results.slice().reverse()) {
        const row = body.insertRow();
        const got = r.questions.reduce((n, q) => n + q.got, 0);
        const of = r.questions.reduce((n, q) => n + q.of, 0);
        const turns = r.questions.filter((q) => q.wrong_turn).length;
        const cells = [new Date(r.at).toLocaleString(), `${r.round}, ${r.minutes} min`,
          r.questions.map((q) => `${q.id} ${q.got}/${q.of}`).join(", "),
          `${of ? Math.round((100 * got) / of) : 0}%` + (turns ? `, ${turns} wrong turn${turns > 1 ? "s" : ""}` : "")];
        for (const text of cells) row.insertCell().textContent = text;
      }
    },
    // Questions drawn in a random order, each kept if it still fits the budget: the clock runs
    // for the questions drawn (their minutes summed), never past the budget.
    draw(pool, budget) {
      const shuffled = pool.slice();
      for (let i = shuffled.length - 1; i > 0; i--) {  // Fisher-Yates shuffle
        const j = Math.floor(Math.random() * (i + 1));
        [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
      }
      const set = [];
      let used = 0;
      for (const q of shuffled) {
        if (used + q.minutes <= budget) { set.push(q); used += q.minutes; }
      }
      return set;
    },
    async start() {
      const form = new FormData(this.setup);
      this.round = form.get("round") === "coding" ? "coding" : "spoken";
      const topics = form.getAll("topic");
      this.budget = Number(form.get("minutes"));
      const problem = this.setup.querySelector(".qb-mock__problem");
      const pool = (await bank()).filter((q) => this.round === "coding" ? q.graded
        : !q.graded && topics.includes(q.topic));
      this.set = this.draw(pool, this.budget);
      this.rubrics = this.rubrics || fetch(at("assets/rubrics.json")).then((r) => r.json());
      if (!this.set.length) {
        problem.textContent = pool.length ? `No question fits ${this.budget} minutes: pick a longer budget.`
          : "Pick at least one topic.";
        return;
      }
      problem.textContent = "";
      this.minutes = this.set.reduce((n, q) => n + q.minutes, 0);
      this.notes = this.set.map(() => "");
      this.pages = await Promise.all(this.set.map((q) => fetch(at(q.url)).then((r) => r.text())
        .then((text) => new DOMParser().parseFromString(text, "text/html"))));
      const rubrics = await this.rubrics;
      this.set = this.set.map((q) => Object.assign({}, q, rubrics[q.id] || {rubric: [], wrong_turn: ""}));
      this.index = 0;
      this.setup.hidden = true;
      this.past.hidden = true;
      this.review.hidden = true;
      this.run.hidden = false;
      this.deadline = Date.now() + this.minutes * 60 * 1000;
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
      if (this.round === "coding") {
        const p = document.createElement("p");
        p.className = "qb-mock__coding";
        p.innerHTML = `Write it in <a href="${at(q.url).href}#grade-your-implementation" target="_blank" ` +
          'rel="noopener">the exercise\'s editor</a> (a new tab) and run the grader before time is up.';
        box.appendChild(p);
      }
      this.run.querySelector(".qb-mock__position").textContent =
        `${this.round === "coding" ? "Coding" : "Spoken"} round · question ${this.index + 1} of ` +
        `${this.set.length} · about ${q.minutes} of ${this.minutes} minutes`;
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
      this.review.querySelector(".qb-mock__saved").textContent = "";
      this.review.querySelector('[data-mock="save"]').disabled = false;
      const list = this.review.querySelector(".qb-mock__answers");
      list.innerHTML = "";
      this.set.forEach((q, i) => {
        const item = document.createElement("article");
        item.className = "qb-mock__answer";
        item.dataset.qid = q.id;
        const short = this.pages[i].querySelector(".qb-short");
        const rubric = q.rubric.length ? q.rubric
          : ["My answer reached the reference answer's headline numbers and reasoning " +
             "(this answer has no rubric yet)."];
        item.innerHTML =
          `<h3>${q.id} · <a href="${at(q.url).href}#answer">${q.title}</a></h3>` +
          (this.notes[i] ? '<p class="qb-mock__your-notes"><strong>Your notes:</strong> </p>' : "") +
          (short ? '<div class="qb-mock__short"></div>'
            : `<p><a href="${at(q.url).href}#answer">Read the reference answer</a>.</p>`) +
          '<fieldset class="qb-rubric"><legend>Rubric: tick each point your answer made</legend>' +
          rubric.map((r) => `<label><input type="checkbox"> <span>${r}</span></label>`).join("") +
          "</fieldset>" +
          (q.wrong_turn ? '<div class="admonition warning qb-wrong-turn"><p class="admonition-title">' +
            `Common wrong turn: check your answer against it (not a point)</p><p>${q.wrong_turn}</p>` +
            '<label><input type="checkbox"> My answer took this wrong turn (it scores nothing; ' +
            "it marks the question shaky)</label></div>" : "");
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
    results() {  // per question: points ticked, points in the rubric, the wrong turn taken
      return [...this.review.querySelectorAll(".qb-mock__answer")].map((item) => {
        const boxes = [...item.querySelectorAll(".qb-rubric input")];
        const turn = item.querySelector(".qb-wrong-turn input");
        return {id: item.dataset.qid, got: boxes.filter((b) => b.checked).length, of: boxes.length,
                wrong_turn: Boolean(turn && turn.checked)};
      });
    },
    score() {
      const results = this.results();
      const got = results.reduce((n, r) => n + r.got, 0);
      const of = results.reduce((n, r) => n + r.of, 0);
      const turns = results.filter((r) => r.wrong_turn).length;
      const pct = of ? Math.round((100 * got) / of) : 0;
      this.review.querySelector(".qb-mock__score").textContent =
        `Score: ${got} of ${of} rubric points (${pct}%).` +
        (turns ? ` Wrong turns taken: ${turns} (not scored; those questions come back tomorrow).` : "");
    },
    // A saved result rates each question: 80% of its points and no wrong turn is "could teach
    // it", half is "getting there", less (or the wrong turn) is "shaky"; the review queue does
    // the rest.
    save() {
      const results = this.results();
      const all = this.saved();
      all.push({at: new Date().toISOString(), round: this.round, minutes: this.minutes, questions: results});
      try { localStorage.setItem(MOCK_KEY, JSON.stringify(all)); } catch (e) { /* private mode */ }
      for (const r of results) {
        const share = r.of ? r.got / r.of : 0;
        review.rate(r.id, r.wrong_turn || share < 0.5 ? 1 : share < 0.8 ? 2 : 3);
      }
      this.review.querySelector('[data-mock="save"]').disabled = true;
      this.review.querySelector(".qb-mock__saved").textContent =
        "Saved: listed under your past interviews, and each question rated for review.";
      refresh();
    },
    again() {
      this.review.hidden = true;
      this.setup.hidden = false;
      this.past.hidden = false;
    },
  };

  // -- the numbers drill: guess a headline number, scored on the ratio ----------------------------
  // 2 points within 20% of the answer, 1 within a factor of 2 (the ratio, either way), else 0.
  const DRILL_KEY = "qb-drill-v1";
  const parseGuess = (text) => {  // 1,200 · 1.2k · 3e-4 · 40%
    const m = String(text).trim().replace(/[,_\s]/g, "").match(/^([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)([kmgt]?)%?$/i);
    if (!m) return NaN;
    return Number(m[1]) * ({"": 1, k: 1e3, m: 1e6, g: 1e9, t: 1e12}[m[2].toLowerCase()]);
  };
  const drillScore = (guess, value) => {
    const ratio = Math.max(guess / value, value / guess);
    return {ratio, points: ratio <= 1.2 ? 2 : ratio <= 2 ? 1 : 0};
  };
  const fmt = (x) => (Math.abs(x) >= 1e4 || Math.abs(x) < 1e-2) ? x.toPrecision(3) : String(Number(x.toPrecision(4)));
  const drill = {
    init() {
      this.root = document.querySelector(".qb-drill");
      if (!this.root) return;
      this.run = this.root.querySelector(".qb-drill__run");
      this.root.querySelector(".qb-drill__setup").addEventListener("submit", (e) => { e.preventDefault(); this.start(); });
      this.root.querySelector(".qb-drill__guess").addEventListener("submit", (e) => { e.preventDefault(); this.check(); });
      this.root.addEventListener("click", (e) => {
        const action = e.target.closest("[data-drill]");
        if (action && action.dataset.drill === "next") this.next();
        if (action && action.dataset.drill === "reset-scores") { localStorage.removeItem(DRILL_KEY); this.table(); }
      });
      this.table();
    },
    scores() { try { return JSON.parse(localStorage.getItem(DRILL_KEY)) || {}; } catch (e) { return {}; } },
    table() {
      const body = this.root.querySelector(".qb-drill__topics tbody");
      body.innerHTML = "";
      const scores = this.scores();
      for (const [topic, s] of Object.entries(scores).sort()) {
        const row = body.insertRow();
        for (const text of [s.title, s.asked, s.within2x, s.within20, `${s.points} of ${2 * s.asked}`]) {
          row.insertCell().textContent = text;
        }
      }
      if (!body.rows.length) body.insertRow().insertCell().textContent = "No numbers guessed yet.";
    },
    async start() {
      const items = await fetch(at("assets/drill.json")).then((r) => r.json());
      const count = Number(new FormData(this.root.querySelector(".qb-drill__setup")).get("count")) || 5;
      const problem = this.root.querySelector(".qb-drill__problem");
      if (!items.length) { problem.textContent = "No claim is marked for the drill yet."; return; }
      problem.textContent = "";
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [items[i], items[j]] = [items[j], items[i]];
      }
      this.set = items.slice(0, count);
      this.index = -1;
      this.points = 0;
      this.run.hidden = false;
      this.root.querySelector(".qb-drill__score").textContent = "";
      this.next();
    },
    next() {
      this.index += 1;
      if (this.index >= this.set.length) return this.finish();
      const item = this.set[this.index];
      this.run.querySelector(".qb-drill__position").textContent =
        `Number ${this.index + 1} of ${this.set.length} · ${item.topic_title}`;
      this.run.querySelector(".qb-drill__question").textContent = item.question;
      this.run.querySelector(".qb-drill__unit").textContent = item.unit;
      this.run.querySelector(".qb-drill__result").innerHTML = "";
      const input = this.run.querySelector('input[name="guess"]');
      input.value = "";
      input.disabled = false;
      this.run.querySelector(".qb-drill__guess button").disabled = false;
      this.run.querySelector('[data-drill="next"]').hidden = true;
      input.focus();
    },
    check() {
      const item = this.set[this.index];
      const input = this.run.querySelector('input[name="guess"]');
      const guess = parseGuess(input.value);
      const result = this.run.querySelector(".qb-drill__result");
      if (!(guess > 0)) { result.textContent = "Give a positive number, e.g. 220, 1.5k or 3e-4."; return; }
      const {ratio, points} = drillScore(guess, item.value);
      this.points += points;
      const verdict = points === 2 ? "within 20%" : points === 1 ? "within 2x" : "more than 2x off";
      result.innerHTML = `<p class="qb-drill__verdict" data-points="${points}"></p><p>Answer: <strong></strong> ` +
        `(<a href="${at(item.url).href}#answer"></a>).</p>`;
      result.querySelector(".qb-drill__verdict").textContent =
        `${verdict}: ${fmt(ratio)}x off, ${points} point${points === 1 ? "" : "s"}.`;
      result.querySelector("strong").textContent = `${fmt(item.value)} ${item.unit}`.trim();
      result.querySelector("a").textContent = `the derivation: ${item.qid} · ${item.title}`;
      const scores = this.scores();
      const s = scores[item.topic] || {title: item.topic_title, asked: 0, within2x: 0, within20: 0, points: 0};
      s.asked += 1; s.within2x += points >= 1 ? 1 : 0; s.within20 += points === 2 ? 1 : 0; s.points += points;
      scores[item.topic] = s;
      try { localStorage.setItem(DRILL_KEY, JSON.stringify(scores)); } catch (e) { /* private mode */ }
      this.table();
      input.disabled = true;
      this.run.querySelector(".qb-drill__guess button").disabled = true;
      const next = this.run.querySelector('[data-drill="next"]');
      next.hidden = false;
      next.textContent = this.index + 1 < this.set.length ? "Next number" : "Finish the round";
      next.focus();
    },
    finish() {
      this.run.hidden = true;
      this.root.querySelector(".qb-drill__score").textContent =
        `Round over: ${this.points} of ${2 * this.set.length} points.`;
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

  // -- a visible cue on what scrolls sideways (site.css draws it on [data-qb-overflows]) ---------
  const SCROLLERS = ".md-typeset__scrollwrap, .md-typeset table:not([class]), pre.qb-out, .qb-out-html, .qb-table, div.arithmatex, " +
    'mjx-container[display="true"], .md-typeset pre > code, .qb-exercise__report, .cm-scroller';
  function scrollCues() {
    const mark = (el) => el.toggleAttribute("data-qb-overflows", el.scrollWidth > el.clientWidth + 1);
    const watched = new WeakSet();
    const resize = new ResizeObserver((entries) => entries.forEach((e) => mark(e.target)));
    const watch = () => document.querySelectorAll(SCROLLERS).forEach((el) => {
      if (!watched.has(el)) { watched.add(el); resize.observe(el); }
      mark(el);
    });
    watch();
    document.addEventListener("toggle", () => requestAnimationFrame(watch), true);
    const content = document.querySelector(".md-content");
    if (content) new MutationObserver(() => requestAnimationFrame(watch)).observe(content, {childList: true, subtree: true});
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(watch);
  }

  // Material loads this script at the end of <body>: the page is parsed.
  accessible();
  openLinkedAnswer();
  window.addEventListener("hashchange", openLinkedAnswer);
  scrollCues();
  progressFileButtons();
  practiceWidget();
  exercise();
  codeToggles();
  table.init();
  mock.init();
  drill.init();
  refresh();
  window.addEventListener("storage", (e) => e.key === KEY && refresh());
})();
