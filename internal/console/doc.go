// Package console serves dss's web console on the HTTP listener: the
// page at / and its assets (embedded, no build step), sign-in sessions
// for the users of the users file, and /v1/status, the node's figures
// for the overview.
//
// The page talks to dss only through what any web page may use: these
// endpoints, and MQTT 5 over WebSocket to the server's WebSocket
// listener, where it reads, writes, lists and watches keys with the
// state store protocol as the signed-in user, under that user's policy.
// A session gives the page a session token (auth.Sessions) that the
// page presents as the user's password in its CONNECT, so that it does
// not keep the password; the token is valid as long as the session.
//
// Without authentication configured, everything here serves this machine
// only: requests from loopback addresses that name a loopback host.
//
// docs/console.md describes it for users, docs/security.md its defences.
package console
