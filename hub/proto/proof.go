package proto

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// The hub's proof over TCP (docs/hub-protocol.md, CHALLENGE): before a
// client sends anything the token protects, the hub proves it holds the
// token, and the client then proves it holds it too, without sending it.

// NonceLen is the length of the client's and the hub's nonces.
const NonceLen = 32

// ProofPrefix starts HELLO's token field when it carries ClientProof
// instead of the token.
const ProofPrefix = "proof:"

// HubProof is the hub's answer to a CHALLENGE: HMAC-SHA256 keyed with the
// token over "oetp hub proof", a zero byte, the client's nonce and the
// hub's.
func HubProof(token string, client, hub []byte) []byte {
	return proof(token, "oetp hub proof", client, hub)
}

// ClientProof is what a client that sent a CHALLENGE puts in HELLO's token
// field: ProofPrefix and the hex of HMAC-SHA256 keyed with the token over
// "oetp client proof", a zero byte, the client's nonce and the hub's.
func ClientProof(token string, client, hub []byte) string {
	return ProofPrefix + hex.EncodeToString(proof(token, "oetp client proof", client, hub))
}

func proof(token, label string, client, hub []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write(client)
	m.Write(hub)
	return m.Sum(nil)
}
