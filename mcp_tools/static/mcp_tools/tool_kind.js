// The tool page shows the fields of the kind chosen: the kind select names each kind's fields (data-kind-fields),
// and the rows of the other kinds' fields are hidden as the choice changes.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const kind = document.getElementById("id_kind");
  const section = kind && kind.closest(".mcp-runs");
  if (!section) {
    return;
  }
  const fields = JSON.parse(kind.dataset.kindFields || "{}");
  function show() {
    section.className = section.className.replace(/\bmcp-kind-[\w-]+/g, "").trim() + " mcp-kind-" + kind.value;
    Object.keys(fields).forEach(function (name) {
      fields[name].forEach(function (field) {
        const row = section.querySelector(".field-" + CSS.escape(field));
        if (row) {
          row.hidden = name !== kind.value;
        }
      });
    });
  }
  kind.addEventListener("change", show);
  show();
});
