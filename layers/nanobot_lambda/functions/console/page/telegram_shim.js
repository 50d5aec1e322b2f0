// Telegram.WebApp outside Telegram (the local stack's URL in a browser, the tests): used only
// when telegram-web-app.js did not load, found no launch data, or runs in no Telegram client
// (platform "unknown": its Main and Back buttons would be drawn by nobody). It reads what
// Telegram puts in the URL's fragment (tgWebAppData: the signed launch data;
// tgWebAppThemeParams), follows the browser's light or dark scheme otherwise, and shows the Back
// and Main buttons as page buttons.
(function () {
  "use strict";
  var telegram = window.Telegram && window.Telegram.WebApp;
  if (telegram && telegram.initData && telegram.platform !== "unknown") return;

  var hash = new URLSearchParams(location.hash.slice(1));
  var initData = hash.get("tgWebAppData") || "";
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var themes = {
    light: {
      bg_color: "#ffffff", text_color: "#000000", hint_color: "#707579",
      link_color: "#3390ec", button_color: "#3390ec", button_text_color: "#ffffff",
      secondary_bg_color: "#f4f4f5", destructive_text_color: "#e53935",
      section_bg_color: "#ffffff", accent_text_color: "#3390ec"
    },
    dark: {
      bg_color: "#212121", text_color: "#ffffff", hint_color: "#aaaaaa",
      link_color: "#8774e1", button_color: "#8774e1", button_text_color: "#ffffff",
      secondary_bg_color: "#181818", destructive_text_color: "#ee686f",
      section_bg_color: "#212121", accent_text_color: "#8774e1"
    }
  };
  var theme = themes[dark ? "dark" : "light"];
  try {
    var given = JSON.parse(hash.get("tgWebAppThemeParams") || "null");
    if (given && typeof given === "object") theme = given;
  } catch (ignored) { /* the browser's scheme then */ }

  var root = document.documentElement;
  Object.keys(theme).forEach(function (key) {
    root.style.setProperty("--tg-theme-" + key.replace(/_/g, "-"), theme[key]);
  });

  var handlers = {};
  function on(event, handler) { (handlers[event] = handlers[event] || []).push(handler); }
  function off(event, handler) {
    handlers[event] = (handlers[event] || []).filter(function (h) { return h !== handler; });
  }
  function emit(event) { (handlers[event] || []).forEach(function (h) { h(); }); }

  function pageButton(id, label) {
    var button = document.createElement("button");
    button.id = id;
    button.type = "button";
    button.hidden = true;
    button.textContent = label;
    button.addEventListener("click", function () { emit(id); });
    document.addEventListener("DOMContentLoaded", function () { document.body.appendChild(button); });
    if (document.body) document.body.appendChild(button);
    return button;
  }
  var back = pageButton("tg-back-button", "‹ Back");
  var main = pageButton("tg-main-button", "");
  var haptics = (window.__haptics = []);

  function buttonApi(element, event) {
    var api = {
      isVisible: false,
      text: element.textContent,
      show: function () { element.hidden = false; api.isVisible = true; return api; },
      hide: function () { element.hidden = true; api.isVisible = false; return api; },
      onClick: function (h) { on(event, h); return api; },
      offClick: function (h) { off(event, h); return api; },
      setText: function (text) { element.textContent = api.text = text; return api; },
      setParams: function (p) { if (p.text) api.setText(p.text); return api; },
      enable: function () { element.disabled = false; return api; },
      disable: function () { element.disabled = true; return api; },
      showProgress: function () { element.classList.add("busy"); return api; },
      hideProgress: function () { element.classList.remove("busy"); return api; }
    };
    return api;
  }

  var user = null;
  try { user = JSON.parse(new URLSearchParams(initData).get("user") || "null"); } catch (e) { user = null; }

  window.Telegram = {
    WebApp: {
      initData: initData,
      initDataUnsafe: { user: user },
      version: hash.get("tgWebAppVersion") || "8.0",
      platform: "unknown",
      colorScheme: dark ? "dark" : "light",
      themeParams: theme,
      isExpanded: true,
      viewportHeight: window.innerHeight,
      viewportStableHeight: window.innerHeight,
      outsideTelegram: true,
      BackButton: buttonApi(back, "tg-back-button"),
      MainButton: buttonApi(main, "tg-main-button"),
      HapticFeedback: {
        impactOccurred: function (style) { haptics.push("impact:" + style); },
        notificationOccurred: function (type) { haptics.push("notification:" + type); },
        selectionChanged: function () { haptics.push("selection"); }
      },
      ready: function () {},
      expand: function () {},
      onEvent: on,
      offEvent: off
    }
  };
  window.addEventListener("resize", function () {
    window.Telegram.WebApp.viewportHeight = window.Telegram.WebApp.viewportStableHeight = window.innerHeight;
    emit("viewportChanged");
  });
})();
