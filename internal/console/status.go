package console

import (
	"context"
	"net/http"
	"time"
)

// Status is the node's figures that /v1/status serves, as JSON. The
// counters count from the start of the process; a reader computes rates
// from two readings.
type Status struct {
	Node    string    `json:"node"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	Time    time.Time `json:"time"`
	// Ready is what /readyz answers: "" when ready, else why not.
	NotReady string `json:"notReady,omitempty"`
	// Clients is the number of MQTT clients connected to this node.
	Clients    int64 `json:"clients"`
	Keys       int64 `json:"keys"`
	StoreBytes int64 `json:"storeBytes"`
	// Requests counts the state store requests carried out by this
	// node, Notifications the KEYNOTIFY notifications it published;
	// MessagesReceived and MessagesSent the PUBLISH packets its clients
	// sent it and it sent them.
	Requests         int64 `json:"requests"`
	Notifications    int64 `json:"notifications"`
	MessagesReceived int64 `json:"messagesReceived"`
	MessagesSent     int64 `json:"messagesSent"`
	// Cluster is the cluster as this node sees it; nil for a single
	// node.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// ClusterStatus is a cluster's members, its leader and each member's lag.
type ClusterStatus struct {
	Leader      string   `json:"leader"`
	Term        uint64   `json:"term"`
	CommitIndex uint64   `json:"commitIndex"`
	Members     []Member `json:"members"`
	// Error says why the status could not be read, when it could not.
	Error string `json:"error,omitempty"`
}

// Member is one member of a cluster.
type Member struct {
	ID           string `json:"id"`
	Addr         string `json:"addr"`
	Voter        bool   `json:"voter"`
	State        string `json:"state,omitempty"`
	AppliedIndex uint64 `json:"appliedIndex"`
	// Lag is how many entries the member's machine is behind the
	// leader's commit index.
	Lag uint64 `json:"lag"`
	// Error says why the member did not answer, when it did not.
	Error string `json:"error,omitempty"`
}

// statusTimeout bounds the reading of a cluster's status.
const statusTimeout = 2 * time.Second

// serveStatus serves the node's figures to a signed-in page, to a
// request with the admin token, or (without authentication) to this
// machine.
func (c *Console) serveStatus(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Auth != nil && !c.adminToken(r) && c.session(r) == nil {
		writeError(w, http.StatusUnauthorized, "sign in to the console, or send the admin token (Authorization: Bearer)")
		return
	}
	if c.cfg.Status == nil {
		writeError(w, http.StatusNotFound, "no status")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
	defer cancel()
	writeJSON(w, http.StatusOK, c.cfg.Status(ctx))
}
