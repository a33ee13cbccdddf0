// Show only the chosen kind's parameters; without script every kind's fields stay visible.
(function () {
  var select = document.getElementById("id_kind");
  if (!select) return;
  function sync() {
    document.querySelectorAll(".kind-params").forEach(function (fs) {
      var active = fs.getAttribute("data-kind") === select.value;
      fs.hidden = !active;
      fs.disabled = !active;
    });
  }
  select.addEventListener("change", sync);
  sync();
})();
