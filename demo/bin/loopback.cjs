// Preloaded with `node --require` to keep a demo HTTP upstream on loopback.
// server-everything calls `app.listen(PORT)`, which binds every interface;
// Cartograph's demo must only ever listen on 127.0.0.1.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || typeof args[0] === "string") && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
