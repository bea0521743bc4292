// Package core is toolsvc's transport-neutral core: everything the wires
// (the gRPC API in package service, the MCP front door in
// service/mcpfront) share, and the only door from a wire to the upstreams.
// A wire imports the core and no part of mcpbridge (TestWiresImportTheCoreOnly).
//
// What the core owns:
//
//   - the operation engine (operation.go, pipeline.go): every upstream
//     operation, a tool call, a read, a prompt, a subscription, a
//     completion, a search, a task request, runs Begin → admit → the
//     operation → Fail → End, with one authentication, authorization, rate
//     limit, classification (classify.go), metrics family and audit line;
//     interactive calls' rounds (interact.go, exchange.go, answers.go) and
//     tasks' handles, polls and ledger (tasks.go) are operations of it;
//   - the auth state (auth.go, authstate.go), swapped whole on a reload;
//   - the admin rule (admin.go): who may run an admin action (refresh,
//     reconnect, reload, login, logout), decided in BeginAdmin from the
//     principal the core authenticated (and, without auth, the peer the
//     wire reports), with the actions methods of the admitted operation,
//     so no wire runs one without it;
//   - the one error value (errors.go), which each wire maps once;
//   - the one view of the catalogs (view.go): who may see what, per
//     principal, with each list's content revision; every listing
//     (lists.go, page.go), search, gRPC watch group and the front door's
//     list_changed ask it;
//   - the one resource subscription hub (subscriptions.go): one upstream
//     subscription per (server, URI) on a replica, shared by both wires,
//     and one lifecycle when the upstream's session is lost;
//   - the operations on the upstreams a wire needs besides those
//     (upstreams.go: status, logins, a task's era), and the names of
//     the values a wire maps onto its messages (catalogtypes.go for the
//     catalog's types, bridgetypes.go for the bridge's plain values).
//
// The core holds no wire state and imports no gRPC, no generated API and
// no wire package (TestLayering).
package core
