// Preload (node -r ./loopback.cjs ...) that keeps servers which listen on
// every interface (server-everything's app.listen(PORT)) on 127.0.0.1, and
// reports the bound port on stderr so PORT=0 can be used:
//   loopback: listening on 127.0.0.1:PORT
const net = require("net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const a0 = args[0];
  if (typeof a0 === "number" || (typeof a0 === "string" && /^\d+$/.test(a0))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (a0 && typeof a0 === "object" && a0.port !== undefined && !a0.host) {
    args[0] = { ...a0, host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const addr = this.address();
    if (addr && typeof addr === "object") process.stderr.write(`loopback: listening on ${addr.address}:${addr.port}\n`);
  });
  return listen.apply(this, args);
};
