// Mission Control's own script: the live indicator, the live re-fetch of a page's content, the blast graph
// (cytoscape, preset layered layout computed by the server) and the copy buttons. Everything else is server-rendered
// HTML enhanced by htmx.
(function () {
  "use strict";
  var colours = { failing: "#b42318", origin: "#f79009", affected: "#fde272", feature: "#7a2e9e",
                  HIGH: "#b42318", MEDIUM: "#f5b83d", LOW: "#175cd3", NONE: "#475467" };
  var FONT = 12;        // label size in graph units
  var MIN_LABEL = 11;   // the smallest label size on screen (px): the first view never zooms out further
  var NARROW = "(max-width: 700px)";

  function narrow() {
    return Boolean(window.matchMedia && window.matchMedia(NARROW).matches);
  }

  // -- The live indicator: connecting → live; on a broken stream reconnecting, then stale since the break. -------

  var STALE_AFTER_MS = 3000;
  var brokeAt = null, staleTimer = null;

  function utcTime(date) {
    return date.toISOString().slice(11, 19) + " UTC";
  }

  function status(state, text) {
    var el = document.getElementById("live-status");
    if (!el || el.getAttribute("data-live") === "snapshot") { return; }
    el.setAttribute("data-live", state);
    var label = el.querySelector(".text");
    if (label) { label.textContent = text; }
  }

  document.addEventListener("htmx:sseOpen", function () {
    var wasBroken = brokeAt !== null;
    brokeAt = null;
    if (staleTimer) { clearTimeout(staleTimer); staleTimer = null; }
    status("open", "live");
    if (wasBroken) {  // changes made while the stream was down: fetch the content again
      document.querySelectorAll("[hx-trigger*='pareis:refresh']").forEach(function (el) {
        htmx.trigger(el, "pareis:refresh");
      });
    }
  });

  document.addEventListener("htmx:sseError", function () {
    if (brokeAt === null) {
      brokeAt = new Date();
      status("reconnecting", "reconnecting…");
      staleTimer = setTimeout(function () {
        status("stale", "stale since " + utcTime(brokeAt) + " — the server does not answer");
      }, STALE_AFTER_MS);
    }
  });

  // A live re-fetch of <main> that brings the same content (same digest) is not swapped in: the graph is not
  // redrawn and nothing the reader opened closes.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var target = evt.detail.target;
    if (!target || target.id !== "main") { return; }
    var found = /<main[^>]*data-digest="([0-9a-f]*)"/.exec(evt.detail.serverResponse || "");
    if (found && found[1] === target.getAttribute("data-digest")) { evt.detail.shouldSwap = false; }
  });

  // -- The blast graph ------------------------------------------------------------------------------------------

  function label(n) {
    if (n.kind === "dataset" || n.kind === "schema") { return n.label + "\n" + n.count.toLocaleString("en") + " columns"; }
    var cut = n.kind === "column" ? n.label.indexOf(").") : -1;  // "table (platform).column": column first
    return cut > 0 ? n.label.slice(cut + 2) + "\n" + n.label.slice(0, cut + 1) : n.label;
  }

  function elements(graph) {
    var perLayer = {}, out = [];
    graph.nodes.forEach(function (n) {
      var i = perLayer[n.layer] = (perLayer[n.layer] || 0) + 1;
      var colour = n.kind === "model" ? colours[n.severity || "NONE"] : colours[n.role] || "#475467";
      out.push({ group: "nodes", data: { id: n.id, label: label(n), kind: n.kind, role: n.role, colour: colour,
                 severity: n.severity || "" }, position: { x: n.layer * 240, y: i * 64 } });
    });
    graph.edges.forEach(function (e, i) {
      out.push({ group: "edges", data: { id: "e" + i, source: e.source, target: e.target, rel: e.rel } });
    });
    return out;
  }

  // The first view: everything when the labels stay legible that way, else the start of the graph (the failing
  // columns, on the left) at the smallest legible zoom; the reader pans from there, or reads the list below. On a
  // phone: everything, an overview to pinch into (the list below, open there, is what is read).
  function firstView(cy) {
    cy.fit(undefined, 20);
    var least = MIN_LABEL / FONT;
    if (cy.zoom() < least && !narrow()) {
      cy.zoom(least);
      var box = cy.elements().boundingBox();
      cy.pan({ x: 20 - box.x1 * least, y: 20 - box.y1 * least });
    }
  }

  function draw(container, data) {
    if (typeof cytoscape !== "function") { return; }
    var started = performance.now();
    var graph = JSON.parse(data.textContent);
    var big = graph.nodes.length + graph.edges.length > 600;
    var cy = cytoscape({
      container: container, elements: elements(graph), layout: { name: "preset", fit: false },
      minZoom: 0.05, maxZoom: 3, textureOnViewport: true, hideEdgesOnViewport: big,
      style: [
        { selector: "node", style: { "background-color": "data(colour)", label: "data(label)", "font-size": FONT,
          color: "#101828", "text-valign": "bottom", "text-halign": "center", "text-margin-y": 3, "text-wrap": "wrap",
          "text-max-width": 210, "text-background-color": "#fcfcfd", "text-background-opacity": 0.85,
          width: 14, height: 14, "min-zoomed-font-size": 7 } },
        { selector: "node[kind = 'model']", style: { shape: "round-rectangle", width: 22, height: 16, "font-weight": "bold" } },
        { selector: "node[kind = 'feature']", style: { shape: "diamond", width: 16, height: 16 } },
        { selector: "node[kind = 'dataset'], node[kind = 'schema']", style: { shape: "barrel", width: 22, height: 18 } },
        // Straight edges with arrows on small graphs; past a few hundred, haystack lines (cytoscape's fastest).
        { selector: "edge", style: big ? { width: 1, "line-color": "#98a2b3", "curve-style": "haystack" } :
          { width: 1, "line-color": "#98a2b3", "curve-style": "straight", "target-arrow-shape": "triangle",
            "target-arrow-color": "#98a2b3", "arrow-scale": 0.6 } },
        { selector: "edge[rel = 'sibling']", style: { "line-style": "dashed", "target-arrow-shape": "none" } },
        { selector: ".hl", style: { "line-color": "#101828", "target-arrow-color": "#101828", width: 2 } }
      ]
    });
    firstView(cy);
    cy.on("tap", "node", function (evt) {
      cy.elements().removeClass("hl");
      evt.target.successors().add(evt.target.predecessors()).addClass("hl");
    });
    cy.one("render", function () {
      // Both figures for the benchmark: drawing alone, and since navigation began (time to first render).
      window.pareisGraphDrawMs = performance.now() - started;
      window.pareisGraphRenderedMs = performance.now();
      container.setAttribute("data-rendered", "true");
    });
    window.pareisGraph = cy;
    container.setAttribute("data-models", String(cy.nodes("[kind = 'model']").length));
    container.setAttribute("data-label-px", (FONT * cy.zoom()).toFixed(1));
  }

  function enhance() {
    var container = document.getElementById("blast"), data = document.getElementById("blast-data");
    if (container && data && !container.hasAttribute("data-drawn")) {
      container.setAttribute("data-drawn", "true");
      if (window.pareisGraph) { window.pareisGraph.destroy(); }  // the one a live update replaced
      draw(container, data);
    }
    var phone = narrow();
    document.querySelectorAll("details[data-open-narrow]:not([data-seen])").forEach(function (d) {
      d.setAttribute("data-seen", "");
      if (phone) { d.open = true; }  // phones: the text twins open (once: the reader may close them)
    });
  }

  window.pareisDrawBlast = enhance;
  document.addEventListener("DOMContentLoaded", enhance);
  document.addEventListener("htmx:afterSettle", enhance);  // a live update swapped the content in

  document.addEventListener("click", function (evt) {
    var fit = evt.target.closest ? evt.target.closest("button[data-graph=fit]") : null;
    if (fit && window.pareisGraph) { window.pareisGraph.fit(undefined, 20); return; }
    var button = evt.target.closest ? evt.target.closest("button[data-copy]") : null;
    if (!button) { return; }
    var text = document.getElementById(button.getAttribute("data-copy")).textContent;
    var done = function () { button.textContent = "copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { button.textContent = "copy failed"; });
    } else {
      var area = document.createElement("textarea");
      area.value = text; document.body.appendChild(area); area.select();
      try { document.execCommand("copy"); done(); } finally { document.body.removeChild(area); }
    }
  });
})();
