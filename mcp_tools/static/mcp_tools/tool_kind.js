// The tool page shows the fields of the kind chosen: its "What it runs" section follows the kind select.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const kind = document.getElementById("id_kind");
  const section = kind && kind.closest(".mcp-runs");
  if (!section) {
    return;
  }
  kind.addEventListener("change", function () {
    section.className = section.className.replace(/\bmcp-kind-[\w-]+/g, "").trim() + " mcp-kind-" + kind.value;
  });
});
