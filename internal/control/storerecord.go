package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler"
)

// ErrStoreRecordUnreadable: the deployment's store record does not parse as ClaimStore writes
// it (written by hand). Wrapped with the key and the command that removes it.
var ErrStoreRecordUnreadable = errors.New("control: the deployment's store record does not parse")

// StoreRecord is the deployment's store as the first leader recorded it: every leader of the
// election must write to this store, or the ledgers split (see scheduler.StoreID).
type StoreRecord struct {
	Store scheduler.StoreID `json:"store"`
	// By is the node that recorded it, and At when, by its clock.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

func (k keys) store() string { return k.prefix + ":store" }

// StoreKey returns the key of the deployment's store record: PREFIX:store.
func (s *Store) StoreKey() string { return s.k.store() }

// StoreRemoveCommand returns the etcdctl command that removes the record, after a deliberate
// move of the deployment to another store: the next leader records its own.
func (s *Store) StoreRemoveCommand() string { return removeCommand(s.k.store()) }

// ClaimStore records id as the deployment's store, by node, unless a record exists, in one
// transaction, and returns the record as it stands afterwards: id's when this call or an
// earlier one of a replica of the same store wrote it, another store's otherwise. The record
// has no lease: it outlives every replica, so that a replica started after them all is still
// judged against it.
func (s *Store) ClaimStore(ctx context.Context, id scheduler.StoreID, node string) (StoreRecord, error) {
	rec, b, err := EncodeStoreRecord(id, node, s.now())
	if err != nil {
		return StoreRecord{}, err
	}
	key := s.k.store()
	resp, err := s.cli.Txn(rctx(ctx)).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(b))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return StoreRecord{}, fmt.Errorf("record the deployment's store at %s: %w", key, err)
	}
	if resp.Succeeded {
		return rec, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 { // removed between the compare and the get: impossible in one transaction
		return StoreRecord{}, fmt.Errorf("record the deployment's store at %s: no record and none written", key)
	}
	return s.decodeStore(kvs[0].Value)
}

// RecordedStore returns the deployment's store record; ok is false when there is none yet.
func (s *Store) RecordedStore(ctx context.Context) (rec StoreRecord, ok bool, err error) {
	key := s.k.store()
	resp, err := s.cli.Get(rctx(ctx), key)
	if err != nil {
		return StoreRecord{}, false, fmt.Errorf("read the deployment's store at %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return StoreRecord{}, false, nil
	}
	rec, err = s.decodeStore(resp.Kvs[0].Value)
	return rec, err == nil, err
}

// decodeStore parses the record's value.
func (s *Store) decodeStore(value []byte) (StoreRecord, error) {
	return ParseStoreRecord(s.k.store(), value, s.StoreRemoveCommand())
}

// EncodeStoreRecord returns the value of a new record of id, by node, at at: what every
// backend's record holds.
func EncodeStoreRecord(id scheduler.StoreID, node string, at time.Time) (StoreRecord, []byte, error) {
	rec := StoreRecord{Store: id, By: node, At: at.UTC()}
	b, err := json.Marshal(rec)
	if err != nil {
		return StoreRecord{}, nil, fmt.Errorf("record the deployment's store: encode: %w", err)
	}
	return rec, b, nil
}

// ParseStoreRecord parses a record's value, read at key; a value without an id is no record
// of this package's, and the error names key and remove, the command that deletes it.
func ParseStoreRecord(key string, value []byte, remove string) (StoreRecord, error) {
	var rec StoreRecord
	if err := json.Unmarshal(value, &rec); err != nil || rec.Store.ID == "" {
		return StoreRecord{}, fmt.Errorf("%w: %s holds %q; remove it with: %s",
			ErrStoreRecordUnreadable, shownKey(key), shownKey(string(value)), remove)
	}
	return rec, nil
}
