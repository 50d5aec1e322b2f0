// The console: plain JavaScript, no library. Every request carries the launch data Telegram
// signed (Authorization: tma <initData>); the server decides who may see what. Nothing from the
// server is ever put into the page as HTML: text goes in as text.
(function () {
  "use strict";
  var app = window.Telegram.WebApp;
  var root = document.getElementById("app");
  var state = { me: null, scope: "", tab: "", restoreId: 0 };
  var mainHandler = null;
  var backHandler = null;

  // -- small helpers --------------------------------------------------------------------------

  function el(tag, attributes) {
    var node = document.createElement(tag);
    var children = Array.prototype.slice.call(arguments, 2);
    Object.keys(attributes || {}).forEach(function (key) {
      var value = attributes[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "onclick" || key === "oninput" || key === "onchange") {
        node.addEventListener(key.slice(2), value);
      } else if (key === "text") {
        node.textContent = value;
      } else if (key === "className") {
        node.className = value;
      } else {
        node.setAttribute(key, value === true ? "" : String(value));
      }
    });
    children.forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function when(iso) {
    if (!iso) return "—";
    var date = new Date(iso);
    return isNaN(date) ? iso : date.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  }

  function dollars(amount) {
    return "$" + (amount >= 100 ? amount.toFixed(0) : amount >= 0.01 || amount === 0 ? amount.toFixed(2) : amount.toFixed(4));
  }

  function haptic(kind) {
    if (!app.HapticFeedback) return;
    if (kind === "tap") app.HapticFeedback.selectionChanged();
    else app.HapticFeedback.notificationOccurred(kind);
  }

  function requestId() {
    state.restoreId += 1;
    return Date.now().toString(36) + "-" + state.restoreId + "-" + Math.random().toString(36).slice(2, 8);
  }

  function api(route, body) {
    var payload = Object.assign({}, body || {});
    if (state.scope && payload.scope === undefined) payload.scope = state.scope;
    return fetch(location.pathname.replace(/\/$/, "") + "/api/" + route, {
      method: "POST",
      headers: { "Authorization": "tma " + app.initData, "Content-Type": "application/json" },
      body: JSON.stringify(payload)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (!response.ok) {
          var error = new Error(data.error || "failed (" + response.status + ")");
          error.status = response.status;
          error.data = data;
          throw error;
        }
        return data;
      });
    });
  }

  function notice(text, kind) {
    var box = document.getElementById("notice");
    box.textContent = text;
    box.className = "notice " + (kind || "");
    box.hidden = !text;
    if (kind === "error") haptic("error");
    if (kind === "success") haptic("success");
  }

  function failed(error) { notice(error.message, "error"); }

  // -- Telegram's buttons -----------------------------------------------------------------------

  function mainButton(text, handler) {
    if (mainHandler) app.MainButton.offClick(mainHandler);
    mainHandler = handler;
    if (!handler) { app.MainButton.hide(); return; }
    app.MainButton.setText(text);
    app.MainButton.onClick(handler);
    app.MainButton.show();
  }

  function backButton(handler) {
    if (backHandler) app.BackButton.offClick(backHandler);
    backHandler = handler;
    if (handler) { app.BackButton.onClick(handler); app.BackButton.show(); }
    else app.BackButton.hide();
  }

  // -- the frame: who, which scope, which section ----------------------------------------------

  var TABS = [
    { id: "memory", label: "Memory", scoped: true },
    { id: "skills", label: "Skills", owner: true },
    { id: "schedules", label: "Schedules", scoped: true },
    { id: "hooks", label: "Hooks", owner: true },
    { id: "people", label: "People", owner: true },
    { id: "models", label: "Models", scoped: true },
    { id: "spending", label: "Spending", scoped: true },
    { id: "activity", label: "Activity", owner: true }
  ];

  function frame() {
    clear(root);
    var me = state.me;
    var header = el("header", {},
      el("h1", { text: "Console" }),
      el("span", { className: "who", text: me.name + (me.is_owner ? " · owner" : "") }));
    if (me.is_owner && me.chats.length > 1) {
      var picker = el("select", { id: "scope", "aria-label": "Scope", onchange: function (event) {
        state.scope = event.target.value;
        haptic("tap");
        show(state.tab);
      } });
      me.chats.forEach(function (chat) {
        var option = el("option", { value: chat.scope, text: chat.label + " (" + chat.scope + ")" });
        if (chat.scope === state.scope) option.selected = true;
        picker.appendChild(option);
      });
      header.appendChild(picker);
    }
    var nav = el("nav", { role: "tablist" });
    TABS.filter(function (tab) { return me.is_owner || !tab.owner; }).forEach(function (tab) {
      nav.appendChild(el("button", {
        type: "button", role: "tab", id: "tab-" + tab.id, "data-tab": tab.id,
        "aria-selected": tab.id === state.tab ? "true" : "false",
        text: tab.label,
        onclick: function () { haptic("tap"); show(tab.id); }
      }));
    });
    root.appendChild(header);
    root.appendChild(nav);
    root.appendChild(el("div", { id: "notice", className: "notice", hidden: true, role: "status" }));
    root.appendChild(el("section", { id: "view" }));
  }

  function view() { return clear(document.getElementById("view")); }

  function show(tab) {
    state.tab = tab;
    Array.prototype.forEach.call(document.querySelectorAll("nav button"), function (button) {
      button.setAttribute("aria-selected", button.getAttribute("data-tab") === tab ? "true" : "false");
    });
    notice("");
    mainButton(null);
    backButton(null);
    var section = view();
    section.setAttribute("data-view", tab);
    section.appendChild(el("p", { className: "hint", text: "Loading…" }));
    section.removeAttribute("data-ready");
    VIEWS[tab](section).then(function () { section.setAttribute("data-ready", tab); });
  }

  // -- Memory ----------------------------------------------------------------------------------

  function memoryView(section) {
    return Promise.all([api("memory"), api("memory/versions"), api("history", { query: "" })])
      .then(function (results) {
        clear(section);
        var memory = results[0];
        var version = memory.version;
        var editor = el("textarea", { id: "memory-text", spellcheck: "false", rows: 12 });
        editor.value = memory.text;
        section.appendChild(el("h2", { text: "MEMORY.md" }));
        section.appendChild(el("p", { className: "hint",
          text: "What the assistant keeps in every prompt of this scope. Saving never overwrites what a turn wrote meanwhile." }));
        section.appendChild(editor);
        function save() {
          app.MainButton.showProgress();
          api("memory/save", { text: editor.value, version: version }).then(function (saved) {
            version = saved.version;
            editor.value = saved.text;
            notice("Saved.", "success");
            memoryVersions(section.querySelector("#versions"));
          }).catch(function (error) {
            if (error.status === 409) {
              notice("MEMORY.md changed since you opened it (a turn wrote to it): not saved. " +
                "Its text now is below; your edit is kept in the box to merge by hand.", "error");
              var current = document.getElementById("memory-current");
              current.hidden = false;
              current.textContent = error.data.text;
              version = error.data.version;
            } else failed(error);
          }).then(function () { app.MainButton.hideProgress(); });
        }
        mainButton("Save MEMORY.md", save);
        section.appendChild(el("pre", { id: "memory-current", className: "current", hidden: true }));
        section.appendChild(el("h2", { text: "Versions" }));
        var versions = el("div", { id: "versions" });
        section.appendChild(versions);
        renderVersions(versions, results[1].versions, function () { show("memory"); });
        section.appendChild(el("h2", { text: "History" }));
        var search = el("input", { id: "history-query", type: "search", placeholder: "Search HISTORY.md (by words)" });
        var found = el("div", { id: "history" });
        var timer = null;
        search.addEventListener("input", function () {
          clearTimeout(timer);
          timer = setTimeout(function () {
            api("history", { query: search.value }).then(function (history) { renderHistory(found, history); }).catch(failed);
          }, 250);
        });
        section.appendChild(search);
        section.appendChild(found);
        renderHistory(found, results[2]);
      }).catch(failed);
  }

  function memoryVersions(container) {
    api("memory/versions").then(function (data) {
      renderVersions(container, data.versions, function () { show("memory"); });
    }).catch(failed);
  }

  function renderVersions(container, versions, after) {
    clear(container);
    if (!versions.length) { container.appendChild(el("p", { className: "hint", text: "No versions yet." })); return; }
    versions.forEach(function (version) {
      var lines = el("pre", { className: "diff" });
      version.diff.split("\n").forEach(function (line) {
        var kind = line.charAt(0) === "+" ? "add" : line.charAt(0) === "-" ? "del" : line.indexOf("@@") === 0 ? "hunk" : "";
        lines.appendChild(el("span", { className: kind, text: line + "\n" }));
      });
      var restore = version.number === 1 ? el("span", { className: "badge", text: "current" }) :
        el("button", { type: "button", className: "small", "data-restore": version.id,
          text: "Restore", onclick: function () {
            haptic("tap");
            api("memory/restore", { version_id: version.id, request: requestId() }).then(function () {
              after();
              notice("Version " + version.number + " restored.", "success");
            }).catch(failed);
          } });
      container.appendChild(el("details", { className: "version", "data-version": version.number },
        el("summary", {},
          el("span", { text: version.number + ". " + when(version.when) }),
          el("span", { className: "hint", text: version.deleted ? " deleted" : " +" + version.added + " −" + version.removed }),
          restore),
        lines));
    });
  }

  function renderHistory(container, history) {
    clear(container);
    container.appendChild(el("p", { className: "hint", text: history.entries.length + " of " + history.total + " entries" }));
    history.entries.forEach(function (entry) {
      container.appendChild(el("blockquote", { className: "entry" }, entry.text));
    });
  }

  // -- Skills ----------------------------------------------------------------------------------

  function skillsView(section) {
    return api("skills").then(function (data) {
      clear(section);
      section.appendChild(el("h2", { text: "Skills" }));
      var list = el("ul", { className: "list" });
      data.skills.forEach(function (skill) {
        var needs = skill.requires.map(function (requirement) {
          var met = skill.met[requirement];
          return requirement + (met === true ? " ✓" : met === false ? " ✗ missing" : " (unknown)");
        }).join(", ");
        var status = skill.error ? "unavailable: " + skill.error :
          skill.off ? "off" + (needs ? " · needs " + needs : "") :
          skill.available === false ? "unavailable: needs " + needs :
          skill.available === null ? "needs " + needs : "on" + (needs ? " · " + needs : "");
        var toggle = el("input", { type: "checkbox", role: "switch", "aria-label": "Use " + skill.name,
          "data-skill-switch": skill.name });
        toggle.checked = !skill.off;
        toggle.addEventListener("change", function () {
          haptic("tap");
          api("skills/switch", { name: skill.name, off: !toggle.checked }).then(function () {
            show("skills"); notice(skill.name + (toggle.checked ? " is on." : " is off."), "success");
          }).catch(failed);
        });
        list.appendChild(el("li", { "data-skill": skill.name },
          el("div", { className: "row" },
            el("span", {},
              el("button", { type: "button", className: "link", text: skill.name,
                onclick: function () { haptic("tap"); skillEditor(section, skill.name); } }),
              " ",
              el("span", { className: "badge " + (skill.error ? "bad" : skill.off ? "off" : ""), text: skill.source })),
            toggle),
          el("p", { className: "hint", text: skill.description }),
          el("p", { className: skill.error || skill.available === false ? "bad" : "hint", "data-skill-status": skill.name,
            text: status + (skill.warning ? " · warning: " + skill.warning : "") })));
      });
      section.appendChild(list);
      section.appendChild(el("p", { className: "hint", id: "skills-checked", text: data.checked ?
        "Requirements checked against what the assistant found on " + when(data.checked.at) +
          (data.checked.sandbox ? " (the code sandbox's programs, its variables)" : " (its variables; no code sandbox: programs unknown)") + "." :
        "Whether requirements are met is not known yet: the assistant records what it checks them against (the sandbox's programs, its variables' names) on its first turn." }));
    }).catch(failed);
  }

  function skillEditor(section, name) {
    section.removeAttribute("data-ready");
    api("skills/read", { name: name }).then(function (skill) {
      clear(section);
      var version = skill.version;
      backButton(function () { show("skills"); });
      section.appendChild(el("h2", { text: "skills/" + name + "/SKILL.md" }));
      if (skill.source === "builtin") {
        section.appendChild(el("p", { className: "hint", text: "Built in: saving makes a workspace copy, which the assistant uses instead." }));
      }
      var editor = el("textarea", { id: "skill-text", spellcheck: "false", rows: 18 });
      editor.value = skill.text;
      section.appendChild(editor);
      mainButton("Save SKILL.md", function () {
        api("skills/save", { name: name, text: editor.value, version: version }).then(function (saved) {
          version = saved.version;
          notice(saved.warning ? "Saved, with a warning: " + saved.warning : "Saved.", "success");
        }).catch(failed);
      });
      section.setAttribute("data-ready", "skill");
    }).catch(failed);
  }

  // -- Schedules -------------------------------------------------------------------------------

  function schedulesView(section) {
    return api("schedules").then(function (data) {
      clear(section);
      section.appendChild(el("h2", { text: "Scheduled jobs" }));
      if (!data.jobs.length) section.appendChild(el("p", { className: "hint", text: "No reminders or scheduled tasks in this chat." }));
      var list = el("ul", { className: "list" });
      data.jobs.forEach(function (job) {
        function act(route, done) {
          return function () {
            haptic("tap");
            api(route, { job_id: job.job_id }).then(function () { show("schedules"); notice(done, "success"); }).catch(failed);
          };
        }
        list.appendChild(el("li", { "data-job": job.job_id },
          el("div", { className: "row" },
            el("strong", { text: job.name }),
            el("span", { className: "badge" + (job.paused ? " off" : ""), text: job.paused ? "paused" : job.kind + (job.quiet ? " · quiet" : "") })),
          el("p", { className: "hint", text: job.description + " · next: " + (job.paused ? "paused" : when(job.next_run)) +
            (job.last_run ? " · last: " + when(job.last_run) + " (" + job.last_status + ")" : "") }),
          el("div", { className: "actions" },
            job.paused ? el("button", { type: "button", className: "small", text: "Resume", onclick: act("schedules/resume", "Resumed.") }) :
              el("button", { type: "button", className: "small", text: "Pause", onclick: act("schedules/pause", "Paused.") }),
            el("button", { type: "button", className: "small danger", text: "Delete", "data-delete": job.job_id,
              onclick: act("schedules/delete", "Deleted.") }))));
      });
      section.appendChild(list);
      if (data.heartbeat) {
        var beat = data.heartbeat;
        var switchBeat = function () {
          haptic("tap");
          api(beat.paused ? "schedules/heartbeat/resume" : "schedules/heartbeat/pause").then(function () {
            show("schedules"); notice(beat.paused ? "Heartbeat resumed." : "Heartbeat paused.", "success");
          }).catch(failed);
        };
        section.appendChild(el("div", { className: "row" }, el("h2", { text: "Heartbeat" }),
          beat.paused ? el("span", { className: "badge off", text: "paused" }) : null));
        section.appendChild(el("p", { className: "hint", text: (beat.expression || "") + " · next: " +
          (beat.paused ? "paused: its firings do nothing" : when(beat.next_run)) +
          (beat.tasks ? "" : " · idle: HEARTBEAT.md has no tasks (no model call)") }));
        if (beat.tasks) section.appendChild(el("pre", { className: "current", text: beat.tasks }));
        section.appendChild(el("div", { className: "actions" },
          el("button", { type: "button", className: "small", id: "heartbeat-switch",
            text: beat.paused ? "Resume" : "Pause", onclick: switchBeat })));
      }
    }).catch(failed);
  }

  // -- Hooks -----------------------------------------------------------------------------------

  function hooksView(section) {
    return api("hooks").then(function (data) {
      clear(section);
      section.appendChild(el("h2", { text: "Event hooks" }));
      var list = el("ul", { className: "list" });
      data.hooks.forEach(function (hook) {
        var deliveries = el("div", { className: "deliveries", "data-deliveries": hook.name });
        list.appendChild(el("li", { "data-hook": hook.name },
          el("div", { className: "row" }, el("strong", { text: hook.name }),
            el("span", { className: "badge", text: "chat " + hook.chat_id + (hook.quiet ? " · quiet" : "") })),
          el("p", { className: "hint mono", text: hook.url }),
          el("div", { className: "actions" },
            el("button", { type: "button", className: "small", text: "Last deliveries", "data-show-deliveries": hook.name,
              onclick: function () { haptic("tap"); hookDeliveries(deliveries, hook.name); } }),
            el("button", { type: "button", className: "small danger", text: "Remove", onclick: function () {
              api("hooks/remove", { name: hook.name }).then(function () { show("hooks"); notice(hook.name + " removed.", "success"); }).catch(failed);
            } })),
          deliveries));
      });
      if (!data.hooks.length) section.appendChild(el("p", { className: "hint", text: "No hooks yet." }));
      section.appendChild(list);
      var name = el("input", { id: "hook-name", placeholder: "name (e.g. deploys)", autocapitalize: "off" });
      var quiet = el("input", { id: "hook-quiet", type: "checkbox" });
      var secret = el("pre", { id: "hook-secret", className: "current", hidden: true });
      section.appendChild(el("h2", { text: "Add a hook" }));
      section.appendChild(el("p", { className: "hint", text: "Its events become tasks in the chat chosen above. Its secret is shown once." }));
      section.appendChild(name);
      section.appendChild(el("label", {}, quiet, " quiet: speak only when something needs you"));
      section.appendChild(secret);
      mainButton("Add hook", function () {
        api("hooks/add", { name: name.value.trim(), quiet: quiet.checked, request: requestId() }).then(function (hook) {
          secret.hidden = false;
          secret.textContent = "URL: " + hook.url + "\nSecret (shown once): " + hook.secret;
          notice("Hook " + hook.name + " added: copy its secret now.", "success");
        }).catch(failed);
      });
    }).catch(failed);
  }

  var CAUSED = {
    answered: "answered",
    quiet: "nothing to report (not sent)",
    running: "running (or waiting for a retry)",
    unseen: "not among the chat's recent turns (still queued, or too long ago)"
  };

  function hookDeliveries(container, name) {
    api("hooks/deliveries", { name: name }).then(function (data) {
      clear(container);
      if (!data.deliveries.length) {
        container.appendChild(el("p", { className: "hint", text: "No delivery yet." }));
      }
      data.deliveries.forEach(function (delivery) {
        var outcome = delivery.outcome === "queued" ? "queued" : delivery.outcome === "duplicate" ? "a repeat, not queued" :
          delivery.outcome + " (" + delivery.status + (delivery.reason ? ": " + delivery.reason : "") + ")";
        var caused = delivery.caused ? CAUSED[delivery.caused.state] + (delivery.caused.answer ? ": " + delivery.caused.answer : "") : "";
        container.appendChild(el("div", { className: "delivery", "data-outcome": delivery.outcome },
          el("div", { className: "row" },
            el("span", { text: when(delivery.at) + (delivery.event ? " · " + delivery.event : "") }),
            el("span", { className: "badge" + (delivery.outcome === "queued" ? "" : " bad"), text: outcome })),
          el("p", { className: "hint mono", text: delivery.size + " bytes" + (delivery.digest ? " · sha256 " + delivery.digest.slice(0, 16) + "…" : "") +
            (delivery.delivery_id ? " · " + delivery.delivery_id : "") }),
          caused ? el("p", { className: "hint", "data-caused": delivery.caused.state, text: "→ " + caused }) : null));
      });
      container.appendChild(el("p", { className: "hint", text: "The last " + data.kept + " are kept, " + data.kept_days + " days at most; of a payload, its size and digest only." }));
    }).catch(failed);
  }

  // -- People ----------------------------------------------------------------------------------

  function peopleView(section) {
    return api("people").then(function (data) {
      clear(section);
      section.appendChild(el("h2", { text: "Waiting for your answer" }));
      if (!data.pairing) section.appendChild(el("p", { className: "hint", text: "Pairing is off (PAIRING=off): only ALLOW_FROM may write." }));
      var waiting = el("ul", { className: "list" });
      data.waiting.forEach(function (ask) {
        function answer(route, done) {
          return function () {
            haptic("tap");
            api(route, { code: ask.code }).then(function () { show("people"); notice(done, "success"); }).catch(failed);
          };
        }
        waiting.appendChild(el("li", { "data-code": ask.code },
          el("div", { className: "row" }, el("strong", { text: ask.name + (ask.username ? " (@" + ask.username + ")" : "") }),
            el("span", { className: "badge mono", text: ask.code })),
          el("div", { className: "actions" },
            el("button", { type: "button", className: "small", text: "Approve", "data-approve": ask.code, onclick: answer("people/approve", ask.name + " may talk to the bot now.") }),
            el("button", { type: "button", className: "small danger", text: "Deny", onclick: answer("people/deny", ask.name + " was refused.") }))));
      });
      if (!data.waiting.length && data.pairing) section.appendChild(el("p", { className: "hint", text: "Nobody is waiting." }));
      section.appendChild(waiting);
      section.appendChild(el("h2", { text: "Approved" }));
      var approved = el("ul", { className: "list", id: "approved" });
      data.approved.forEach(function (person) {
        approved.appendChild(el("li", { "data-person": person.user_id },
          el("div", { className: "row" }, el("strong", { text: person.name }), el("span", { className: "hint", text: "id " + person.user_id })),
          el("button", { type: "button", className: "small danger", text: "Remove", onclick: function () {
            api("people/remove", { person: person.user_id }).then(function () { show("people"); notice(person.name + " removed.", "success"); }).catch(failed);
          } })));
      });
      section.appendChild(approved);
      section.appendChild(el("h2", { text: "ALLOW_FROM" }));
      section.appendChild(el("p", { className: "hint", text: (data.everyone ? "everyone · " : "") +
        data.allowed_ids.concat(data.allowed_usernames.map(function (name) { return "@" + name; })).join(", ") +
        (data.groups.length ? " · groups " + data.groups.join(", ") : "") }));
    }).catch(failed);
  }

  // -- Models ----------------------------------------------------------------------------------

  function modelsView(section) {
    return api("models").then(function (data) {
      clear(section);
      section.appendChild(el("h2", { text: "This chat's model" }));
      var chat = data.chat;
      var preset = el("select", { id: "model-preset", disabled: !chat.may_change });
      preset.appendChild(el("option", { value: "default", text: "default: " + (data.default_model || "LLM_MODEL") }));
      data.presets.forEach(function (p) {
        var option = el("option", { value: p.name, text: p.name + ": " + p.model + (p.description ? " — " + p.description : "") });
        if (chat.preset === p.name) option.selected = true;
        preset.appendChild(option);
      });
      var thinking = el("select", { id: "model-thinking", disabled: !chat.may_change });
      ["default", "off", "low", "medium", "high"].forEach(function (level) {
        var option = el("option", { value: level, text: "thinking: " + level });
        if ((chat.thinking || "default") === level) option.selected = true;
        thinking.appendChild(option);
      });
      function choose(body) {
        haptic("tap");
        api("models/choose", body).then(function (answer) { notice(answer.message, "success"); }).catch(failed);
      }
      preset.addEventListener("change", function () { choose({ preset: preset.value }); });
      thinking.addEventListener("change", function () { choose({ thinking: thinking.value }); });
      section.appendChild(preset);
      section.appendChild(thinking);
      if (!chat.may_change) section.appendChild(el("p", { className: "hint", text: "Only the owner may change it (MODEL_SWITCHERS)." }));
      section.appendChild(el("p", { className: "hint", text: "A change starts the provider's prompt cache over: the next answer costs a little more." }));
    }).catch(failed);
  }

  // -- Spending --------------------------------------------------------------------------------

  var SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attributes) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attributes).forEach(function (key) { node.setAttribute(key, String(attributes[key])); });
    return node;
  }

  function chart(id, bars, limit, label) {
    var width = 320, height = 120, top = 8, bottom = 18;
    var highest = Math.max(limit || 0, bars.reduce(function (m, bar) { return Math.max(m, bar.value); }, 0)) || 1;
    var picture = svg("svg", { id: id, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": label, "class": "chart" });
    var step = width / bars.length;
    bars.forEach(function (bar, index) {
      var h = (height - top - bottom) * bar.value / highest;
      var rect = svg("rect", { x: (index * step + step * 0.15).toFixed(1), y: (height - bottom - h).toFixed(1),
        width: (step * 0.7).toFixed(1), height: Math.max(h, bar.value > 0 ? 1 : 0).toFixed(1),
        "class": "bar", "data-period": bar.period, "data-cost": bar.value });
      var title = svg("title", {});
      title.textContent = bar.period + ": " + dollars(bar.value);
      rect.appendChild(title);
      picture.appendChild(rect);
    });
    if (limit) {
      var y = (height - bottom - (height - top - bottom) * limit / highest).toFixed(1);
      picture.appendChild(svg("line", { x1: 0, x2: width, y1: y, y2: y, "class": "limit", "data-limit": limit }));
    }
    var first = svg("text", { x: 0, y: height - 4, "class": "axis" });
    first.textContent = bars.length ? bars[0].period : "";
    var last = svg("text", { x: width, y: height - 4, "class": "axis", "text-anchor": "end" });
    last.textContent = bars.length ? bars[bars.length - 1].period : "";
    picture.appendChild(first);
    picture.appendChild(last);
    return picture;
  }

  function spendingView(section) {
    return api("spending").then(function (data) {
      clear(section);
      var days = data.chat.days, months = data.chat.months, limits = data.limits;
      var today = days[days.length - 1], month = months[months.length - 1];
      section.appendChild(el("h2", { text: "Spending" }));
      section.appendChild(el("p", { id: "spend-summary", text: "Today " + dollars(today.cost_usd) + " · this month " + dollars(month.cost_usd) +
        " · all time " + dollars(data.chat.total.cost_usd) + " · " + data.chat.total.turns + " turns" }));
      section.appendChild(el("h3", { text: "Per day (last 31)" + (limits.person_daily ? " · limit " + dollars(limits.person_daily) : "") }));
      section.appendChild(chart("chart-days", days.map(function (d) { return { period: d.day, value: d.cost_usd }; }), limits.person_daily, "Cost per day"));
      section.appendChild(el("h3", { text: "Per month" + (limits.person_monthly ? " · limit " + dollars(limits.person_monthly) : "") }));
      section.appendChild(chart("chart-months", months.map(function (m) { return { period: m.month, value: m.cost_usd }; }), limits.person_monthly, "Cost per month"));
      section.appendChild(modelTable("spend-models", "This month, per model", data.models));
      if (data.chats) {
        section.appendChild(el("h3", { text: "This month, per person and group" }));
        var most = data.chats.reduce(function (m, c) { return Math.max(m, c.this_month.cost_usd); }, 0) || 1;
        var table = el("table", { id: "spend-people" });
        data.chats.forEach(function (c) {
          table.appendChild(el("tr", { "data-scope": c.scope }, el("td", { text: c.label }),
            el("td", {}, el("meter", { min: 0, max: most, value: c.this_month.cost_usd })),
            el("td", { text: dollars(c.this_month.cost_usd) }),
            el("td", { className: "hint", text: c.this_month.turns + " turns" })));
        });
        section.appendChild(table);
      }
      if (data.everyone_models) section.appendChild(modelTable("spend-everyone-models", "Everyone this month, per model", data.everyone_models));
      if (data.everyone) {
        section.appendChild(el("h3", { text: "Everyone together, per day" + (limits.daily ? " · limit " + dollars(limits.daily) : "") }));
        section.appendChild(chart("chart-everyone", data.everyone.days.map(function (d) { return { period: d.day, value: d.cost_usd }; }), limits.daily, "Cost of all chats per day"));
      }
      section.appendChild(el("p", { className: "hint", text: "litellm's prices; counted per chat, day and month, and per model and month (chat models' calls only)." }));
    }).catch(failed);
  }

  function modelTable(id, title, models) {
    var box = el("div", {});
    box.appendChild(el("h3", { text: title }));
    if (!models.length) {
      box.appendChild(el("p", { className: "hint", text: "No model calls this month." }));
      return box;
    }
    var table = el("table", { id: id });
    models.forEach(function (m) {
      table.appendChild(el("tr", { "data-model": m.model }, el("td", { text: m.model }),
        el("td", { text: dollars(m.cost_usd) }),
        el("td", { className: "hint", text: m.model_calls + " calls · " + m.prompt_tokens + " in · " + m.completion_tokens + " out" })));
    });
    box.appendChild(table);
    return box;
  }

  function turnFigures(turn) {
    if (turn.models === undefined) return "";
    var parts = [turn.models.join(", ") || "no model", (turn.prompt_tokens + turn.completion_tokens) + " tokens",
      turn.cost_usd === null ? "cost unknown" : dollars(turn.cost_usd)];
    return parts.join(" · ");
  }

  // -- Activity --------------------------------------------------------------------------------

  function activityView(section) {
    return api("activity").then(function (data) {
      clear(section);
      section.appendChild(el("h2", { text: "Recent turns" }));
      var turns = el("table", { id: "turns" });
      data.turns.forEach(function (turn) {
        turns.appendChild(el("tr", { "data-scope": turn.scope }, el("td", { text: when(turn.when) }), el("td", { text: turn.chat }),
          el("td", { className: "figures", text: turnFigures(turn) }),
          el("td", { className: "hint", text: turn.tools.length ? turn.tools.join(", ") : "no tools" }),
          el("td", { className: "error", text: turn.error ? "ended unanswered: " + turn.error : "" })));
      });
      if (!data.turns.length) section.appendChild(el("p", { className: "hint", text: "No turns yet." }));
      section.appendChild(turns);
      section.appendChild(el("h2", { text: "Dead-letter queue" }));
      if (!data.dead_letters.length) section.appendChild(el("p", { className: "hint", text: data.dead_letters_known ? "Empty: every turn got through." : "Not known here." }));
      var letters = el("ul", { className: "list" });
      data.dead_letters.forEach(function (letter) {
        letters.appendChild(el("li", { "data-letter": letter.message_id },
          el("p", { text: letter.job }),
          el("p", { className: "hint", text: when(letter.sent_at) + " · " + letter.receive_count + " attempts · " + letter.size + " bytes" }),
          el("button", { type: "button", className: "small", text: "Replay", onclick: function () {
            api("activity/replay", { message_id: letter.message_id }).then(function () { show("activity"); notice("Sent back to the turn queue.", "success"); }).catch(failed);
          } })));
      });
      section.appendChild(letters);
    }).catch(failed);
  }

  var VIEWS = {
    memory: memoryView, skills: skillsView, schedules: schedulesView, hooks: hooksView,
    people: peopleView, models: modelsView, spending: spendingView, activity: activityView
  };

  // -- start -----------------------------------------------------------------------------------

  function viewport() {
    document.documentElement.style.setProperty("--viewport-height", (app.viewportStableHeight || window.innerHeight) + "px");
  }

  app.ready();
  app.expand();
  viewport();
  app.onEvent("viewportChanged", viewport);
  app.onEvent("themeChanged", function () { document.documentElement.setAttribute("data-scheme", app.colorScheme); });
  document.documentElement.setAttribute("data-scheme", app.colorScheme || "light");

  if (!app.initData) {
    root.appendChild(el("p", { className: "notice error", id: "signed-out", text: "Open the console from the bot in Telegram (its menu button, or /console)." }));
    return;
  }
  api("me", {}).then(function (me) {
    state.me = me;
    state.scope = me.scope;
    frame();
    var wanted = (new URLSearchParams(location.hash.slice(1))).get("tab");
    show(wanted && VIEWS[wanted] ? wanted : "memory");
  }).catch(function (error) {
    clear(root);
    root.appendChild(el("p", { className: "notice error", id: "signed-out",
      text: error.status === 401 ? "This console's sign-in has expired or is not Telegram's: open it from the bot again." : error.message }));
  });
})();
