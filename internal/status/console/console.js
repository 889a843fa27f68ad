// The scheduler's web console: it polls /api/console and draws the document with DOM nodes.
// Job output, reasons and names come from parties the scheduler does not trust, so text only
// ever enters the page as textContent, never as markup.
"use strict";

const refreshMs = 2000;
const tokenKey = "scheduler.adminToken";
let lastDoc = null;

// el makes an element with attributes and children; strings become text nodes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, String(v));
    else if (k === "title") e.title = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function token() { return sessionStorage.getItem(tokenKey) || ""; }

function say(text, isError) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.className = isError ? "error" : "";
  m.hidden = !text;
}

function when(t) {
  if (!t || t.startsWith("0001-")) return "-";
  return t.replace("T", " ").replace(/\.\d+/, "").replace(/Z$/, " UTC");
}

async function refresh() {
  try {
    const resp = await fetch("/api/console", { cache: "no-store", headers: { Accept: "application/json" } });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    lastDoc = await resp.json();
    draw(lastDoc);
    document.getElementById("updated").textContent = "updated " + when(lastDoc.at) + " by " + lastDoc.node;
  } catch (err) {
    document.getElementById("updated").textContent = "cannot reach the replica: " + err.message;
  }
}

function loop() {
  refresh().finally(() => setTimeout(loop, refreshMs));
}

function draw(doc) {
  drawAdmin(doc);
  const l = doc.leader;
  const leader = document.getElementById("leader");
  if (l) {
    leader.replaceChildren(
      el("strong", { class: "leader-node" }, l.node), " leads with token ",
      el("strong", { class: "leader-token" }, String(l.token)),
      l.since ? " since " + when(l.since) : "");
  } else {
    leader.replaceChildren(el("strong", {}, "no replica leads"), ": no job runs until one is elected");
  }
  document.querySelector("#replicas tbody").replaceChildren(...doc.replicas.map(r =>
    el("tr", { class: r.table_differs ? "differs" : "" },
      el("td", {}, r.node, r.leads ? " (leader)" : ""),
      el("td", {}, r.version),
      el("td", { class: "mono" }, r.table_hash, r.table_differs ? el("span", { class: "flag" }, " differs") : ""),
      el("td", { class: "mono" }, r.http_addr),
      el("td", {}, when(r.started_at)))));
  document.getElementById("warnings").replaceChildren(...doc.warnings.map(w => el("li", {}, w)));
  document.getElementById("jobs").replaceChildren(...doc.jobs.map(j => drawJob(j, doc.admin && token() !== "")));
  drawMessages("pending", doc.outbox.pending, m => m.next_attempt_at);
  drawMessages("dead", doc.outbox.dead, m => m.created_at);
}

function drawAdmin(doc) {
  const has = token() !== "";
  document.getElementById("login").hidden = !doc.admin || has;
  document.getElementById("admin").hidden = !doc.admin || !has;
}

function drawJob(j, actions) {
  const badges = [];
  if (!j.enabled) badges.push(el("span", { class: "badge disabled" }, "disabled"));
  if (j.paused) {
    const by = j.paused_by && j.paused_by.by ? " by " + j.paused_by.by + " at " + when(j.paused_by.at) : "";
    badges.push(el("span", { class: "badge paused" }, "paused" + by));
  }
  if (j.blocked) badges.push(el("span", { class: "badge blocked", title: j.blocked.reason }, j.blocked.held ? "blocked (fence held)" : "blocked"));
  const buttons = actions ? el("span", { class: "actions" },
    j.paused ? button(j.name, "resume", "Resume") : button(j.name, "pause", "Pause"),
    button(j.name, "trigger", "Trigger now")) : null;
  const head = el("div", { class: "job-head" },
    el("h3", { class: "job-name" }, j.name), badges,
    el("span", { class: "words" }, j.words),
    el("code", { class: "muted" }, j.schedule), el("span", { class: "muted" }, j.timezone), buttons);
  const slots = el("ol", { class: "slots" }, j.slots.map(s =>
    el("li", { class: s.dst ? "slot dst-marked" : "slot" }, when(s.at) + (s.zone === "UTC" ? "" : " " + s.zone),
      s.dst ? el("span", { class: "dst" }, " DST: " + s.dst) : "")));
  const runs = j.runs.slice().reverse(); // oldest first on the timeline
  const timeline = el("ol", { class: "timeline", "aria-label": "recent runs, oldest first" }, runs.map(r =>
    el("li", { class: "status-" + r.status, title: when(r.scheduled_at) + " " + r.status + (r.reason ? ": " + r.reason : "") })));
  const table = el("table", { class: "runs" },
    el("thead", {}, el("tr", {}, ["slot", "outcome", "reason / error", "attempt", "token", "node", "duration", "output"].map(h => el("th", {}, h)))),
    el("tbody", {}, j.runs.map(r =>
      el("tr", { class: "run status-" + r.status + (r.manual ? " run-manual" : ""), "data-status": r.status },
        el("td", { class: "mono" }, when(r.scheduled_at), r.manual ? " (manual)" : ""),
        el("td", { class: "status" }, r.status),
        el("td", {}, r.error || r.reason),
        el("td", {}, String(r.attempt)),
        el("td", {}, String(r.token)),
        el("td", {}, r.node),
        el("td", {}, r.duration),
        el("td", {}, r.output ? el("pre", {}, r.output) : "")))));
  const blocked = j.blocked ? el("p", { class: "blocked-reason" }, j.blocked.reason) : null;
  return el("article", { class: "job", "data-job": j.name }, head, blocked,
    j.slots.length ? el("div", {}, el("span", { class: "muted" }, "next slots"), slots) : el("p", { class: "muted" }, "no upcoming slots"),
    j.runs.length ? [timeline, table] : el("p", { class: "muted" }, "no runs yet"));
}

function button(job, action, label) {
  const b = el("button", { type: "button", "data-action": action }, label);
  b.addEventListener("click", () => act(job, action, b));
  return b;
}

async function act(job, action, b) {
  b.disabled = true;
  try {
    const resp = await fetch("/api/jobs/" + encodeURIComponent(job) + "/" + action, {
      method: "POST",
      headers: { "Authorization": "Bearer " + token(), "X-Scheduler-Console": "1", "Content-Type": "application/json" },
      body: "{}",
    });
    const body = await resp.json().catch(() => ({}));
    if (resp.status === 401) {
      sessionStorage.removeItem(tokenKey);
      say("The admin token was refused; enter it again.", true);
    } else if (!resp.ok) {
      say(body.error || "HTTP " + resp.status, true);
    } else {
      say(body.message || action + " done", false);
    }
  } catch (err) {
    say("cannot reach the replica: " + err.message, true);
  } finally {
    b.disabled = false;
    refresh();
  }
}

function drawMessages(id, msgs, at) {
  document.querySelector("#" + id + " tbody").replaceChildren(...msgs.map(m =>
    el("tr", {},
      el("td", { class: "mono" }, m.key), el("td", {}, m.job), el("td", {}, m.kind), el("td", {}, m.destination),
      el("td", {}, String(m.attempts)), el("td", {}, when(at(m))), el("td", {}, m.last_error))));
  if (msgs.length === 0) {
    document.querySelector("#" + id + " tbody").replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "none")));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login").addEventListener("submit", ev => {
    ev.preventDefault();
    const input = document.getElementById("token");
    if (input.value) sessionStorage.setItem(tokenKey, input.value.trim());
    input.value = "";
    say("", false);
    if (lastDoc) draw(lastDoc);
  });
  document.getElementById("forget").addEventListener("click", () => {
    sessionStorage.removeItem(tokenKey);
    if (lastDoc) draw(lastDoc);
  });
  loop();
});
