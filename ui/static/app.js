// lore dashboard: the live page's stream (server-sent events). Pages work
// without it; it only adds what happens after the page was loaded.
(function () {
  "use strict";
  var feed = document.getElementById("announcements");
  if (!feed || !window.EventSource || feed.dataset.live !== "1") { return; }
  var src = new EventSource("/live/stream");
  var state = document.getElementById("stream-state");
  src.onopen = function () { if (state) { state.textContent = "connected"; } };
  src.onerror = function () { if (state) { state.textContent = "reconnecting…"; } };
  src.addEventListener("announcement", function (e) {
    var a = JSON.parse(e.data);
    var li = document.createElement("li");
    li.dataset.type = a.type;
    var t = document.createElement("span");
    t.className = "t";
    t.textContent = a.type;
    li.appendChild(t);
    li.appendChild(document.createTextNode(" " + a.project + " · " + a.subject + " · " + a.time + " — " + a.summary));
    var empty = document.getElementById("no-announcements");
    if (empty) { empty.remove(); }
    feed.insertBefore(li, feed.firstChild);
  });
  src.addEventListener("stats", function (e) {
    var s = JSON.parse(e.data);
    var set = function (id, v) { var el = document.getElementById(id); if (el) { el.textContent = v; } };
    set("stat-seq", s.folded_seq);
    set("stat-log", s.log_last_seq);
    set("stat-lag", s.lag_events);
    set("stat-dlq", s.dead_letter_total);
    set("stat-rate-folded", s.folded_per_sec.toFixed(1));
    set("stat-rate-appended", s.appended_per_sec.toFixed(1));
  });
})();
