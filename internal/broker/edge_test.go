package broker

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// coreEdge is every function and method of the broker core
// (internal/mqtt and the packages beneath it) that the binding calls: the
// edge between dss's state store and the MQTT broker it maintains
// (docs/adr/0005-own-mqtt-core.md). The core's types (Client, Packet and
// their fields), constants and interfaces are the vocabulary the two
// share and are not listed. A call that is not here fails
// TestCoreEdge: add it here and to the ADR's account of the edge, so that
// a change of the core knows what the binding depends on.
var coreEdge = []string{
	// Building and running the server.
	"mqtt.New", "mqtt.NewDefaultServerCapabilities",
	"listeners.NewTCP", "listeners.NewTCPFromListener",
	"*mqtt.Server.AddListener", "*mqtt.Server.NewClient",
	"*mqtt.Server.Serve", "*mqtt.Server.AwaitAcknowledgements", "*mqtt.Server.Close",
	"*listeners.TCP.Address", "*listeners.TCP.Failing", "*listeners.TCP.AcceptErrors",
	// MQTT over WebSocket.
	"listeners.NewWebSocket", "*listeners.WebSocket.Address", "*listeners.WebSocket.Failing",
	"*listeners.WebSocket.AcceptErrors",
	// The memory queued for sessions without a connection, and the
	// retained messages, for metrics.
	"*mqtt.Queues.Bytes", "*mqtt.Queues.Held", "*mqtt.TopicsIndex.RetainedCount", "*mqtt.TopicsIndex.RetainedBytes",
	// The request path: a response and its PUBACK in one write, routing
	// by the topic index's routes, without the topic trie.
	"*mqtt.Server.Deliver",
	"*mqtt.Server.InjectPacket", "*mqtt.TopicsIndex.Route", "*mqtt.TopicsIndex.RoutesVersion",
	"*mqtt.Route.Version", "*mqtt.Clients.Get",
	"*mqtt.Client.WriteNow", "*mqtt.Client.Queue", "*mqtt.Client.Write",
	// A request's response topic, which may not hold a wildcard.
	"packets.HasWildcard",
	// Back-pressure per connection (requests in hand).
	"*mqtt.Client.BeginPending", "*mqtt.Client.EndPending",
	// Connections that end or are ended.
	"*mqtt.Client.Closed", "*mqtt.Client.IsTakenOver",
	"*mqtt.Server.DisconnectClient", "*mqtt.Clients.GetAll",
	// Authorization: a requester's own response route checked once, and
	// a connection's subscriptions checked again after a policy change.
	"*mqtt.Server.CheckACL", "*mqtt.Subscriptions.GetAll",
	// One broker across a cluster (docs/adr/0009): messages from other
	// nodes, sessions that move between nodes, and the retained messages
	// of the replicated state mirrored into the core's index. The core
	// calls the binding through mqtt.Remote.
	"*mqtt.Server.DeliverRemote", "*mqtt.Server.InstallSession", "*mqtt.Server.TakeSession", "*mqtt.Server.CancelWill",
	"*mqtt.TopicsIndex.RetainMessage", "*packets.Packets.GetAll",
}

// TestCoreEdge type-checks the binding and fails on a call into the broker
// core that coreEdge does not list.
func TestCoreEdge(t *testing.T) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p struct{ ImportPath, Export string }
		if dec.Decode(&p) != nil {
			break
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	names, _ := filepath.Glob("*.go")
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{Importer: imp}).Check("github.com/dssio/dss/internal/broker", fset, files, info); err != nil {
		t.Fatal(err)
	}
	const core = "github.com/dssio/dss/internal/mqtt"
	called := map[string]token.Position{}
	for id, obj := range info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil || (fn.Pkg().Path() != core && !strings.HasPrefix(fn.Pkg().Path(), core+"/")) {
			continue
		}
		name := fn.Pkg().Name() + "." + fn.Name()
		if recv := fn.Type().(*types.Signature).Recv(); recv != nil {
			name = types.TypeString(recv.Type(), func(p *types.Package) string { return p.Name() }) + "." + fn.Name()
		}
		called[name] = fset.Position(id.Pos())
	}
	for name, pos := range called {
		if !slices.Contains(coreEdge, name) {
			t.Errorf("%s: the binding calls %s, which is not on the core's edge (coreEdge)", pos, name)
		}
	}
	for _, name := range coreEdge {
		if _, ok := called[name]; !ok {
			t.Errorf("coreEdge lists %s, which the binding no longer calls", name)
		}
	}
}
