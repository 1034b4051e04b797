// Mission Control's own script: draws the blast graph (cytoscape, preset layered layout computed by the server) and
// wires the copy buttons. Everything else is server-rendered HTML enhanced by htmx.
(function () {
  "use strict";
  var colours = { failing: "#c0392b", origin: "#e67e22", affected: "#f4d03f", feature: "#8e44ad",
                  HIGH: "#c0392b", MEDIUM: "#d68910", LOW: "#2e86c1", NONE: "#98a2b3" };

  function elements(graph) {
    var perLayer = {}, out = [];
    graph.nodes.forEach(function (n) {
      var i = perLayer[n.layer] = (perLayer[n.layer] || 0) + 1;
      var colour = n.kind === "model" ? colours[n.severity || "NONE"] : colours[n.role] || "#98a2b3";
      var label = n.kind === "dataset" || n.kind === "schema" ? n.label + " · " + n.count + " col" : n.label;
      out.push({ group: "nodes", data: { id: n.id, label: label, kind: n.kind, role: n.role, colour: colour,
                 severity: n.severity || "" }, position: { x: n.layer * 260, y: i * 46 } });
    });
    graph.edges.forEach(function (e, i) {
      out.push({ group: "edges", data: { id: "e" + i, source: e.source, target: e.target, rel: e.rel } });
    });
    return out;
  }

  window.pareisDrawBlast = function (containerId, dataId) {
    var container = document.getElementById(containerId), data = document.getElementById(dataId);
    if (!container || !data || typeof cytoscape !== "function") { return; }
    var started = performance.now();
    var graph = JSON.parse(data.textContent);
    var big = graph.nodes.length + graph.edges.length > 600;
    var cy = cytoscape({
      container: container, elements: elements(graph), layout: { name: "preset", fit: true, padding: 20 },
      minZoom: 0.05, maxZoom: 3, textureOnViewport: true, hideEdgesOnViewport: true,
      style: [
        { selector: "node", style: { "background-color": "data(colour)", label: "data(label)", "font-size": 10,
          "text-valign": "center", "text-halign": "right", "text-margin-x": 4, width: 14, height: 14,
          "min-zoomed-font-size": 6 } },
        { selector: "node[kind = 'model']", style: { shape: "round-rectangle", width: 22, height: 16, "font-weight": "bold" } },
        { selector: "node[kind = 'feature']", style: { shape: "diamond", width: 16, height: 16 } },
        { selector: "node[kind = 'dataset'], node[kind = 'schema']", style: { shape: "barrel", width: 22, height: 18 } },
        // Straight edges with arrows on small graphs; past a few hundred, haystack lines (cytoscape's fastest).
        { selector: "edge", style: big ? { width: 1, "line-color": "#c8ccd4", "curve-style": "haystack" } :
          { width: 1, "line-color": "#c8ccd4", "curve-style": "straight", "target-arrow-shape": "triangle",
            "target-arrow-color": "#c8ccd4", "arrow-scale": 0.6 } },
        { selector: "edge[rel = 'sibling']", style: { "line-style": "dashed", "target-arrow-shape": "none" } },
        { selector: ".hl", style: { "line-color": "#101828", "target-arrow-color": "#101828", width: 2 } }
      ]
    });
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
  };

  // The live stream's state on its element (data-live="open" | "error"), for people and tests alike.
  document.addEventListener("htmx:sseOpen", function (evt) { evt.target.setAttribute("data-live", "open"); });
  document.addEventListener("htmx:sseError", function (evt) { evt.target.setAttribute("data-live", "error"); });

  document.addEventListener("click", function (evt) {
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
