package auth

import (
	"crypto/x509"
	"net"
	"strings"
)

// Principal is who a connection is, as authentication established it.
// The policy's rules match it, and its fields fill the rules'
// substitutions.
type Principal struct {
	// ClientID is the MQTT client id the connection uses.
	ClientID string
	// Username is the user the password was checked for; empty when the
	// client did not log in with a password (a user name sent without a
	// users file to check it against is not trusted).
	Username string
	// Attributes come from the client's verified certificate, by name
	// (see CertificateAttributes); nil without one.
	Attributes map[string][]string
}

// Identity names the principal for the rule that one client id cannot be
// taken over by another principal: the user, else the certificate's
// subject, else "anonymous".
func (p *Principal) Identity() string {
	switch {
	case p.Username != "":
		return "user:" + p.Username
	case len(p.Attributes["subject"]) > 0:
		return "certificate:" + p.Attributes["subject"][0]
	}
	return "anonymous"
}

// Attribute returns the first value of the attribute name, and whether
// the principal has it.
func (p *Principal) Attribute(name string) (string, bool) {
	if v := p.Attributes[name]; len(v) > 0 {
		return v[0], true
	}
	return "", false
}

// CertificateAttributes returns the attributes of a client certificate
// that a policy can match: the whole subject (RFC 2253, as "subject"),
// each field of the subject by name (commonName, serialNumber, country,
// organization, organizationalUnit, locality, province, streetAddress,
// postalCode), and the subject alternative names (dnsName, email, uri,
// ip). A field with several values has them all, in certificate order.
func CertificateAttributes(cert *x509.Certificate) map[string][]string {
	a := make(map[string][]string)
	add := func(name string, values ...string) {
		for _, v := range values {
			if v != "" {
				a[name] = append(a[name], v)
			}
		}
	}
	s := cert.Subject
	add("subject", s.String())
	add("commonName", s.CommonName)
	add("serialNumber", s.SerialNumber)
	add("country", s.Country...)
	add("organization", s.Organization...)
	add("organizationalUnit", s.OrganizationalUnit...)
	add("locality", s.Locality...)
	add("province", s.Province...)
	add("streetAddress", s.StreetAddress...)
	add("postalCode", s.PostalCode...)
	add("dnsName", cert.DNSNames...)
	add("email", cert.EmailAddresses...)
	for _, u := range cert.URIs {
		add("uri", u.String())
	}
	for _, ip := range cert.IPAddresses {
		add("ip", ip.String())
	}
	return a
}

// remoteHost is the source a remote address counts for, which failures
// are counted by: its IP address, and for IPv6 its /64 network, which
// one host has whole (an attacker changing addresses within it stays one
// source).
func remoteHost(remote string) string {
	h, _, err := net.SplitHostPort(remote)
	if err != nil {
		h = strings.TrimSpace(remote)
	}
	if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return h
}
