// Command redisbridge is the state store glued together the way plants
// do it without dss: a bridge process that takes the state store's
// requests from an MQTT broker and carries them out in Redis. It serves
// as the reference of scripts/bench.sh's attach scenario (Mosquitto +
// this bridge + Redis, beside Mosquitto + dss attach and dss serve), and
// is no part of dss.
//
// It subscribes to the request topic with a shared subscription, carries
// out SET (NX, NEX, PX), GET, DEL and VDEL with one Redis command or
// script each, keeping every key's value and version (an HLC of the
// bridge's clock) in a hash, and publishes the response as the protocol
// says: same correlation data, __stat, __protVer, __ts when there is a
// version. Workers carry out requests concurrently, as a bridge that is
// not to be the bottleneck must; KEYNOTIFY and fencing tokens are not
// supported.
//
//	redisbridge --broker mqtt://127.0.0.1:1883 --redis 127.0.0.1:6379
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/redis/go-redis/v9"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

func main() {
	broker := flag.String("broker", "mqtt://127.0.0.1:1883", "URL of the MQTT 5 broker")
	addr := flag.String("redis", "127.0.0.1:6379", "address of Redis")
	workers := flag.Int("workers", 64, "requests carried out at once")
	clientID := flag.String("client-id", "redisbridge", "MQTT client id")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *broker, *addr, *clientID, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "redisbridge:", err)
		os.Exit(1)
	}
}

// job is a request taken from the broker.
type job struct {
	payload       []byte
	responseTopic string
	correlation   []byte
	ts            string
}

func run(ctx context.Context, broker, addr, clientID string, workers int) error {
	u, err := url.Parse(broker)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: workers})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", addr, err)
	}
	b := &bridge{rdb: rdb, clock: hlc.NewClock("bridge", time.Now)}
	jobs := make(chan job, 4*workers)
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{
		ServerUrls: []*url.URL{u},
		KeepAlive:  30,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			go func() {
				_, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "$share/bridge/" + wire.RequestTopic, QoS: 1}}})
				if err != nil {
					slog.Error("subscribe", "err", err)
				}
			}()
		},
		ClientConfig: paho.ClientConfig{
			ClientID: clientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				p := pr.Packet
				if p.Properties == nil || p.Properties.ResponseTopic == "" || len(p.Properties.CorrelationData) == 0 {
					return true, nil
				}
				j := job{payload: p.Payload, responseTopic: p.Properties.ResponseTopic, correlation: p.Properties.CorrelationData}
				for _, u := range p.Properties.User {
					if u.Key == wire.PropTimestamp {
						j.ts = u.Value
					}
				}
				jobs <- j
				return true, nil
			}},
		},
	})
	if err != nil {
		return err
	}
	for range workers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-jobs:
					payload, version := b.execute(ctx, &j)
					user := paho.UserProperties{{Key: wire.PropStatus, Value: wire.StatusOK}, {Key: wire.PropProtocolVersion, Value: wire.ProtocolVersion}}
					if version != "" {
						user = append(user, paho.UserProperty{Key: wire.PropTimestamp, Value: version})
					}
					_, err := cm.Publish(ctx, &paho.Publish{QoS: 1, Topic: j.responseTopic, Payload: payload,
						Properties: &paho.PublishProperties{CorrelationData: j.correlation, ContentType: wire.ContentType, User: user}})
					if err != nil && ctx.Err() == nil {
						slog.Warn("response not published", "err", err)
					}
				}
			}
		}()
	}
	<-ctx.Done()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = cm.Disconnect(dctx)
	return nil
}

// bridge carries out requests in Redis.
type bridge struct {
	rdb   *redis.Client
	clock *hlc.Clock
}

// The scripts keep a key as a hash of its value (v) and version (t).
var (
	setScript = redis.NewScript(`
local cond = ARGV[3]
local cur = redis.call('HMGET', KEYS[1], 'v', 't')
if cur[1] and (cond == 'NX' or (cond == 'NEX' and cur[1] ~= ARGV[1])) then
  return {0, cur[2]}
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 't', ARGV[2])
if ARGV[4] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) else redis.call('PERSIST', KEYS[1]) end
return {1, ARGV[2]}`)
	delScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'v', 't')
if not cur[1] then return {0, ''} end
if ARGV[1] == '1' and cur[1] ~= ARGV[2] then return {-1, cur[2]} end
redis.call('DEL', KEYS[1])
return {1, cur[2]}`)
)

// execute carries out one request and returns the response's payload
// and version ("" for none).
func (b *bridge) execute(ctx context.Context, j *job) ([]byte, string) {
	var args [6][]byte
	req, _, perr := wire.ParseRequest(j.payload, args[:0])
	if perr != nil {
		return errPayload(perr), ""
	}
	key := string(req.Key)
	switch req.Verb {
	case wire.VerbSet:
		if j.ts == "" {
			return errPayload(wire.ErrMissingTimestamp), ""
		}
		remote, err := hlc.Parse(j.ts)
		if err != nil {
			return errPayload(wire.ErrMalformedTimestamp), ""
		}
		version := b.clock.Update(remote).String()
		cond := ""
		switch req.Cond {
		case wire.IfMissing:
			cond = "NX"
		case wire.IfMissingOrEqual:
			cond = "NEX"
		}
		px := ""
		if req.PX > 0 {
			px = fmt.Sprint(req.PX)
		}
		res, err := setScript.Run(ctx, b.rdb, []string{key}, req.Value, version, cond, px).Slice()
		if err != nil {
			return errPayload(wire.ErrUnavailable), ""
		}
		v, _ := res[1].(string)
		if res[0].(int64) == 0 {
			return resp.AppendInt(nil, -1), v
		}
		return resp.AppendSimple(nil, "OK"), v
	case wire.VerbGet:
		res, err := b.rdb.HMGet(ctx, key, "v", "t").Result()
		if err != nil {
			return errPayload(wire.ErrUnavailable), ""
		}
		v, ok := res[0].(string)
		if !ok {
			return resp.AppendNull(nil), ""
		}
		t, _ := res[1].(string)
		return resp.AppendBulk(nil, []byte(v)), t
	case wire.VerbDel, wire.VerbVDel:
		compare := "0"
		if req.Verb == wire.VerbVDel {
			compare = "1"
		}
		res, err := delScript.Run(ctx, b.rdb, []string{key}, compare, req.Value).Slice()
		if err != nil {
			return errPayload(wire.ErrUnavailable), ""
		}
		v, _ := res[1].(string)
		return resp.AppendInt(nil, res[0].(int64)), v
	}
	return errPayload(wire.ErrUnknownCommand), ""
}

func errPayload(e *wire.Error) []byte { return resp.AppendError(nil, "ERR "+e.Text()) }
