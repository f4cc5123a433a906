package auth

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func testUsers(t *testing.T) *Users {
	t.Helper()
	h, err := HashPassword([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := ParseUsers(strings.NewReader("alice:" + h + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestNoAuthorityWithoutUsersOrCertificates(t *testing.T) {
	if a := NewAuthority(Options{AllowAnonymous: true}); a != nil {
		t.Fatal("an authority without users or client certificates")
	}
}

func TestAuthenticate(t *testing.T) {
	users := testUsers(t)
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "line-1", Organization: []string{"plant-1"}}}
	for _, c := range []struct {
		name      string
		opts      Options
		cred      Credentials
		wantErr   error
		wantUser  string
		wantIdent string
	}{
		{"password", Options{Users: users}, Credentials{Username: "alice", HasUsername: true, Password: []byte("pw"), HasPassword: true}, nil, "alice", "user:alice"},
		{"wrong password", Options{Users: users}, Credentials{Username: "alice", HasUsername: true, Password: []byte("x"), HasPassword: true}, ErrBadCredentials, "", ""},
		{"unknown user", Options{Users: users}, Credentials{Username: "bob", HasUsername: true, Password: []byte("pw"), HasPassword: true}, ErrBadCredentials, "", ""},
		{"user name without password", Options{Users: users}, Credentials{Username: "alice", HasUsername: true}, ErrBadCredentials, "", ""},
		{"nothing", Options{Users: users}, Credentials{}, ErrNoCredentials, "", ""},
		{"nothing, anonymous allowed", Options{Users: users, AllowAnonymous: true}, Credentials{}, nil, "", "anonymous"},
		{"certificate", Options{ClientCerts: true}, Credentials{Certificate: cert}, nil, "", "certificate:CN=line-1,O=plant-1"},
		{"certificate, unchecked user name", Options{ClientCerts: true}, Credentials{Certificate: cert, Username: "alice", HasUsername: true}, nil, "", "certificate:CN=line-1,O=plant-1"},
		{"certificate and a user name without password", Options{Users: users, ClientCerts: true}, Credentials{Certificate: cert, Username: "alice", HasUsername: true}, nil, "", "certificate:CN=line-1,O=plant-1"},
		{"certificate and a wrong password", Options{Users: users, ClientCerts: true}, Credentials{Certificate: cert, Username: "alice", HasUsername: true, Password: []byte("x"), HasPassword: true}, ErrBadCredentials, "", ""},
		{"certificate and a password", Options{Users: users, ClientCerts: true}, Credentials{Certificate: cert, Username: "alice", HasUsername: true, Password: []byte("pw"), HasPassword: true}, nil, "alice", "user:alice"},
		{"certificate not accepted", Options{Users: users}, Credentials{Certificate: cert}, ErrNoCredentials, "", ""},
		{"password without users file", Options{ClientCerts: true}, Credentials{Username: "alice", HasUsername: true, Password: []byte("pw"), HasPassword: true}, ErrBadCredentials, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewAuthority(c.opts).Authenticate(c.cred)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err %v, want %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if p.Username != c.wantUser || p.Identity() != c.wantIdent {
				t.Fatalf("principal user %q identity %q, want %q %q", p.Username, p.Identity(), c.wantUser, c.wantIdent)
			}
		})
	}
}

func TestStillValidAfterTheUsersFileChanged(t *testing.T) {
	a := NewAuthority(Options{Users: testUsers(t)})
	p, err := a.Authenticate(Credentials{Username: "alice", HasUsername: true, Password: []byte("pw"), HasPassword: true})
	if err != nil {
		t.Fatal(err)
	}
	hash := a.UserHash("alice")
	if !a.StillValid(&p, hash) {
		t.Fatal("not valid before any change")
	}
	a.SetUsers(testUsers(t)) // a new hash: the password was set again
	if a.StillValid(&p, hash) {
		t.Fatal("valid after the password changed")
	}
	empty, _ := ParseUsers(strings.NewReader(""))
	a.SetUsers(empty)
	if a.StillValid(&p, a.UserHash("alice")) {
		t.Fatal("valid after the user was removed")
	}
	anon := Principal{ClientID: "x"}
	if !a.StillValid(&anon, "") {
		t.Fatal("a principal without a user is not valid")
	}
}

func TestCertificateAttributes(t *testing.T) {
	u, _ := url.Parse("spiffe://plant-1/line-1")
	cert := &x509.Certificate{
		Subject: pkix.Name{
			CommonName: "line-1", Organization: []string{"plant-1", "acme"}, OrganizationalUnit: []string{"ops"},
			Country: []string{"SE"}, Locality: []string{"Lund"},
		},
		DNSNames:       []string{"line-1.plant-1"},
		EmailAddresses: []string{"ops@plant-1"},
		URIs:           []*url.URL{u},
		IPAddresses:    []net.IP{net.IPv4(10, 1, 2, 3)},
	}
	got := CertificateAttributes(cert)
	want := map[string][]string{
		"subject":            {"CN=line-1,OU=ops,O=plant-1+O=acme,L=Lund,C=SE"},
		"commonName":         {"line-1"},
		"organization":       {"plant-1", "acme"},
		"organizationalUnit": {"ops"},
		"country":            {"SE"},
		"locality":           {"Lund"},
		"dnsName":            {"line-1.plant-1"},
		"email":              {"ops@plant-1"},
		"uri":                {"spiffe://plant-1/line-1"},
		"ip":                 {"10.1.2.3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attributes\n got %v\nwant %v", got, want)
	}
}
