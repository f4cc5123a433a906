package wire

import "strings"

const (
	// RequestTopic is the system topic that the state store receives
	// requests on.
	RequestTopic = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"

	// ReservedPrefix starts the topics that belong to the state store; a
	// response topic may not start with it.
	ReservedPrefix = "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8"

	notifyInfix = "/command/notify/"
)

const hexDigits = "0123456789ABCDEF"

// ForbiddenResponseTopic reports whether a request may not name topic as
// its response topic.
func ForbiddenResponseTopic(topic string) bool {
	return topic == RequestTopic || strings.HasPrefix(topic, ReservedPrefix)
}

// AppendNotifyTopic appends the topic on which the client clientID receives
// notifications for key:
// clients/statestore/v1/{id}/{HEX(clientID)}/command/notify/{HEX(key)}.
func AppendNotifyTopic(b []byte, clientID string, key []byte) []byte {
	b = append(b, ReservedPrefix...)
	b = append(b, '/')
	b = appendHex(b, clientID)
	b = append(b, notifyInfix...)
	return appendHex(b, key)
}

// NotifyTopicLen returns the length of the notification topic of a client
// id of clientIDLen bytes for a key of keyLen bytes.
func NotifyTopicLen(clientIDLen, keyLen int) int {
	return len(ReservedPrefix) + 1 + 2*clientIDLen + len(notifyInfix) + 2*keyLen
}

// MaxTopicLen is the longest topic MQTT can carry.
const MaxTopicLen = 65535

// NotifyTopic returns the notification topic of clientID for key.
func NotifyTopic(clientID string, key []byte) string {
	return string(AppendNotifyTopic(make([]byte, 0, len(ReservedPrefix)+len(notifyInfix)+1+2*(len(clientID)+len(key))), clientID, key))
}

// NotifyTopicFilter returns the subscription filter that matches every
// notification for clientID.
func NotifyTopicFilter(clientID string) string {
	return string(appendHex([]byte(ReservedPrefix+"/"), clientID)) + notifyInfix + "+"
}

func appendHex[S ~string | ~[]byte](b []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		b = append(b, hexDigits[s[i]>>4], hexDigits[s[i]&0x0f])
	}
	return b
}
