package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dataworkers/dw/pkg/config"
)

// selfSigned makes a certificate for 127.0.0.1 and writes it as a CA file.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, ca
}

// Confluent Cloud's shape: SASL over TLS. Here SCRAM-SHA-256 over TLS against kfake.
func TestSASLOverTLS(t *testing.T) {
	cert, ca := selfSigned(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "dw", "s3cret"), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := &config.Kafka{BootstrapServers: c.ListenAddrs(), Timeout: 2 * time.Second,
		SASL: &config.SASL{Mechanism: "SCRAM-SHA-256", Username: "dw", Password: "s3cret"},
		TLS:  &config.TLS{Enabled: true, CAFile: ca}}
	topics, err := open(t, cfg).ListTopics(context.Background(), "", false)
	if err != nil || len(topics) != 1 || topics[0].Partitions != 2 {
		t.Fatalf("topics = %+v, %v", topics, err)
	}
	// Without the CA the broker's certificate is not trusted: an error, not a hang.
	noCA := *cfg
	noCA.TLS = &config.TLS{Enabled: true}
	if _, err := open(t, &noCA).ListTopics(context.Background(), "", false); err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "tls") {
		t.Fatalf("untrusted certificate: %v", err)
	}
}
