// Package auth decides who a client is and what it may do, and knows
// nothing of MQTT connections: the broker binding asks it.
//
// Authentication: a users file of names and argon2id password hashes
// (Users), and client certificates, whose subject and alternative names
// become a Principal's attributes. Authority holds the live users file
// and policy and answers Authenticate; Throttle slows repeated failures
// from one address.
//
// Authorization: a Policy (a YAML file modelled on the vendor's
// BrokerAuthorization rules) compiles, for one Principal, into Grants:
// may it connect, publish on a topic, subscribe to a filter, read or
// write a state store key. Grants are built once per connection and
// answer without allocating. Isolation keeps every client's response
// and notification topics to that client, whatever the policy says.
package auth
