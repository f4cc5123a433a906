package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// The vendor's RPC pattern across nodes: a command invoker on n1 and its
// executor on n3, over plain MQTT 5 request/response (response topic,
// correlation data), beside the state store and KEYNOTIFY used through
// the nodes the clients are connected to.
func TestClusterCommandInvokerAndExecutorOnDifferentNodes(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	const commandTopic = "services/thermostat/command/setpoint/invoke"
	executor := connectMQTT(t, n3.mqtt, "executor")
	executor.subscribe(0, paho.SubscribeOptions{Topic: "$share/executors/" + commandTopic, QoS: 1})
	store := dsstest.Dial(t, n3.mqtt, "executor-store")
	invoker := connectMQTT(t, n1.mqtt, "invoker")
	invoker.sub("clients/invoker/responses/#", 1)
	watcher := dsstest.Dial(t, n2.mqtt, "watcher")
	if p := watcher.Request(dsstest.Cmd("KEYNOTIFY", "setpoint")); string(p.Payload) != "+OK\r\n" {
		t.Fatalf("KEYNOTIFY: %q", p.Payload)
	}

	go func() {
		// The executor: each command is carried out by storing its value,
		// and answered on the command's response topic.
		for {
			var req *paho.Publish
			select {
			case req = <-executor.msgs:
			case <-time.After(pubsubTimeout):
				return
			}
			res := store.Set([]string{"setpoint", string(req.Payload)})
			ctx, cancel := context.WithTimeout(context.Background(), pubsubTimeout)
			_, _ = executor.paho.Publish(ctx, &paho.Publish{
				Topic: req.Properties.ResponseTopic, QoS: 1, Payload: res.Payload,
				Properties: &paho.PublishProperties{CorrelationData: req.Properties.CorrelationData,
					User: paho.UserProperties{{Key: "__stat", Value: "200"}}},
			})
			cancel()
		}
	}()
	for i := 0; i < 10; i++ {
		corr := []byte(fmt.Sprint("call-", i))
		value := fmt.Sprint(20 + i)
		invoker.pub(&paho.Publish{Topic: commandTopic, QoS: 1, Payload: []byte(value),
			Properties: &paho.PublishProperties{ResponseTopic: "clients/invoker/responses/setpoint", CorrelationData: corr}})
		res := invoker.next()
		if !bytes.Equal(res.Properties.CorrelationData, corr) || string(res.Payload) != "+OK\r\n" {
			t.Fatalf("call %d: response %q with correlation %q", i, res.Payload, res.Properties.CorrelationData)
		}
		if n := watcher.Next(); n.Topic != wire.NotifyTopic("watcher", []byte("setpoint")) || !bytes.Contains(n.Payload, []byte(value)) {
			t.Fatalf("notification %d: %s %q", i, n.Topic, n.Payload)
		}
		reader := dsstest.Dial(t, tc.members[i%3].mqtt, fmt.Sprint("reader-", i))
		if p := reader.Request(dsstest.Cmd("GET", "setpoint")); !bytes.Contains(p.Payload, []byte(value)) {
			t.Fatalf("GET through %s after call %d: %q", tc.members[i%3].id, i, p.Payload)
		}
	}
}

// Checked from outside as a new user would: mosquitto_pub, mosquitto_sub
// and mosquitto_rr, each against another node.
func TestClusterWithMosquittoClients(t *testing.T) {
	for _, tool := range []string{"mosquitto_pub", "mosquitto_sub", "mosquitto_rr"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed: .ci/deps installs it", tool)
			}
			t.Skipf("%s is not installed (apt-get install mosquitto-clients)", tool)
		}
	}
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	hp := func(m *member) []string {
		host, port, _ := net.SplitHostPort(m.mqtt)
		return []string{"-h", host, "-p", port, "-V", "mqttv5"}
	}
	run := exec.Command
	// A subscriber on n2 waits for one message; the publisher on n1.
	var subOut dsstest.Buffer
	sub := run("mosquitto_sub", append(hp(n2), "-t", "outside/#", "-q", "1", "-C", "1", "-W", "20", "-v")...)
	sub.Stdout, sub.Stderr = &subOut, &subOut
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	dsstest.EventuallyWithin(t, writeLimit, "mosquitto_sub receives from another node", func() bool {
		out, err := run("mosquitto_pub", append(hp(n1), "-t", "outside/a", "-q", "1", "-m", "hello")...).CombinedOutput()
		if err != nil {
			t.Fatalf("mosquitto_pub: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(subOut.String(), "outside/a hello")
	})
	_ = sub.Wait()
	if got := subOut.String(); got != "outside/a hello\n" {
		t.Fatalf("mosquitto_sub on n2 printed %q", got)
	}
	// A retained message set with mosquitto_pub on n1 is read on n3.
	if out, err := run("mosquitto_pub", append(hp(n1), "-t", "outside/retained", "-q", "1", "-r", "-m", "kept")...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub -r: %v\n%s", err, out)
	}
	out, err := run("mosquitto_sub", append(hp(n3), "-t", "outside/retained", "-C", "1", "-W", "10")...).CombinedOutput()
	if err != nil || string(out) != "kept\n" {
		t.Fatalf("mosquitto_sub on n3 of the retained message: %v %q", err, out)
	}
	// mosquitto_rr on n3 asks a responder on n1.
	responder := connectMQTT(t, n1.mqtt, "responder")
	responder.sub("outside/rpc", 1)
	go func() {
		select {
		case req := <-responder.msgs:
			ctx, cancel := context.WithTimeout(context.Background(), pubsubTimeout)
			defer cancel()
			_, _ = responder.paho.Publish(ctx, &paho.Publish{Topic: req.Properties.ResponseTopic, QoS: 1,
				Payload: append([]byte("pong "), req.Payload...), Properties: &paho.PublishProperties{CorrelationData: req.Properties.CorrelationData}})
		case <-time.After(pubsubTimeout):
		}
	}()
	out, err = run("mosquitto_rr", append(hp(n3), "-t", "outside/rpc", "-e", "outside/rpc/response", "-q", "1", "-m", "ping", "-W", "10")...).CombinedOutput()
	if err != nil || string(out) != "pong ping\n" {
		t.Fatalf("mosquitto_rr on n3: %v %q", err, out)
	}
}
