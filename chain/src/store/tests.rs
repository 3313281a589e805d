//! The store's tree: the one-batch-per-block update must give the root a plain
//! key-by-key update gives, proofs must verify, pruning must bound the node count without
//! touching the heights it keeps, and the read caches must never change an answer.

use super::*;

fn key(k: u64) -> String {
    format!("bank/balances/{k:04}")
}

fn value(height: u64, k: u64) -> Vec<u8> {
    let h = blake3::hash(&[height.to_le_bytes(), k.to_le_bytes()].concat());
    h.as_bytes()[..8 + (k % 24) as usize].to_vec()
}

/// Pseudo-random writes over a 400-key space; every fifth block also deletes, and every
/// seventh block deletes only (no upserts at all).
fn writes(height: u64) -> Write {
    let mut out = Write::new();
    let count = 1 + blake3::hash(&height.to_le_bytes()).as_bytes()[0] as u64;
    for i in 0..count {
        let r = blake3::hash(&[height.to_le_bytes(), i.to_le_bytes()].concat());
        let k = u64::from_le_bytes(r.as_bytes()[..8].try_into().unwrap()) % 400;
        let delete = (height % 5 == 4 && i % 3 == 0) || height % 7 == 6;
        out.insert(key(k), (!delete).then(|| value(height, k)));
    }
    out
}

fn genesis() -> Write {
    (0..200).map(|k| (key(k), Some(value(0, k)))).collect()
}

/// The reference: one tree version per height, every key inserted or deleted one by one.
fn reference_roots(heights: u64) -> Vec<[u8; 32]> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let db = store.tree_db();
    let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&db);
    let as_set = |w: &Write| {
        w.iter()
            .map(|(k, v)| (key_hash(k), v.clone()))
            .collect::<Vec<_>>()
    };
    let mut sets = vec![as_set(&genesis())];
    sets.extend((1..=heights).map(|h| as_set(&writes(h))));
    let (roots, _) = tree.put_value_sets(sets, 0).unwrap();
    roots.into_iter().map(|r| r.0).collect()
}

fn run(store: &mut Store, heights: u64) -> Vec<[u8; 32]> {
    let mut roots = vec![store.genesis_root(1, &genesis()).unwrap()];
    for h in 1..=heights {
        let block = store.prepare(h, (h == 1).then(genesis), writes(h)).unwrap();
        roots.push(block.app_hash);
        store.commit(block).unwrap();
    }
    roots
}

fn count(store: &Store, family: &str) -> usize {
    let family = cf(&store.db, family).unwrap();
    store.db.iterator_cf(family, IteratorMode::Start).count()
}

#[test]
fn batched_blocks_give_the_key_by_key_roots_and_valid_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap().with_proof_heights(None);
    let roots = run(&mut store, 40);
    assert_eq!(roots, reference_roots(40));
    for height in (0..=40).step_by(3) {
        for k in (0..400).step_by(37) {
            let (value, proof) = store.get_with_proof(&key(k), height).unwrap();
            proof
                .verify(
                    jmt::RootHash(roots[height as usize]),
                    key_hash(&key(k)),
                    value.as_deref(),
                )
                .unwrap_or_else(|e| panic!("key {k} at height {height}: {e}"));
            assert_eq!(value, store.get_at(&key(k), height).unwrap());
        }
    }
}

#[test]
fn pruning_keeps_the_window_readable_and_bounds_the_store() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut archive = Store::open(dir_a.path()).unwrap().with_proof_heights(None);
    let mut pruned = Store::open(dir_b.path())
        .unwrap()
        .with_proof_heights(Some(5));
    let roots = run(&mut archive, 60);
    assert_eq!(
        run(&mut pruned, 60),
        roots,
        "pruning must not change the app hash"
    );

    // Heights 56..=60 stay provable and readable, every key included.
    for height in 56..=60 {
        for k in 0..400 {
            let (value, proof) = pruned.get_with_proof(&key(k), height).unwrap();
            let root = jmt::RootHash(roots[height as usize]);
            proof
                .verify(root, key_hash(&key(k)), value.as_deref())
                .unwrap();
            assert_eq!(
                value,
                archive.get_at(&key(k), height).unwrap(),
                "key {k} at {height}"
            );
            assert_eq!(
                value,
                pruned.get_at(&key(k), height).unwrap(),
                "key {k} at {height}"
            );
        }
    }
    // Older heights are refused, not answered from partial data.
    for err in [
        pruned.get_with_proof(&key(7), 40).unwrap_err(),
        pruned.get_at(&key(7), 55).unwrap_err(),
    ] {
        let text = format!("{err:#}");
        assert!(
            text.contains("keeps the state of heights 56 and later"),
            "{text}"
        );
    }
    let (kept, all) = (count(&pruned, CF_NODES), count(&archive, CF_NODES));
    assert!(
        kept * 3 < all,
        "pruned tree holds {kept} nodes, the archive {all}"
    );
    let (kept, all) = (count(&pruned, CF_VALUES), count(&archive, CF_VALUES));
    assert!(
        kept * 2 < all,
        "pruned store holds {kept} values, the archive {all}"
    );
    // Exactly what the kept heights can read is left: per key, at most one value record at
    // or below the pruning point (the one those heights read), and no deletion marker there.
    let through = pruned.pruned_through.unwrap();
    let values = cf(&pruned.db, CF_VALUES).unwrap();
    let mut below: std::collections::BTreeMap<Vec<u8>, Vec<(u64, u8)>> = Default::default();
    for item in pruned.db.iterator_cf(values, IteratorMode::Start) {
        let (k, v) = item.unwrap();
        let version = u64::from_be_bytes(k[32..40].try_into().unwrap());
        if version <= through {
            below
                .entry(k[..32].to_vec())
                .or_default()
                .push((version, v[0]));
        }
    }
    for (key, records) in &below {
        assert!(
            records.len() == 1 && records[0].1 == 1,
            "key {} keeps {records:?} at or below {through}",
            hex::encode(key)
        );
    }

    // A reopened store remembers how far it pruned and goes on from there.
    drop(pruned);
    let mut reopened = Store::open(dir_b.path())
        .unwrap()
        .with_proof_heights(Some(5));
    assert!(reopened.get_at(&key(7), 55).is_err());
    let block = reopened.prepare(61, None, writes(61)).unwrap();
    let root = block.app_hash;
    reopened.commit(block).unwrap();
    assert_eq!(
        root,
        archive.prepare(61, None, writes(61)).unwrap().app_hash
    );
    assert!(reopened.get_at(&key(7), 56).is_err());
    for k in 0..400 {
        let (value, proof) = reopened.get_with_proof(&key(k), 57).unwrap();
        proof
            .verify(
                jmt::RootHash(roots[57]),
                key_hash(&key(k)),
                value.as_deref(),
            )
            .unwrap();
        assert_eq!(value, archive.get_at(&key(k), 57).unwrap());
    }
}

#[test]
fn reads_through_small_caches_match_the_written_state_as_entries_leave() {
    // 16 entries: blocks and disk reads leave the caches every block; 600: a few blocks stay.
    for capacity in [16, 600] {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path())
            .unwrap()
            .with_proof_heights(Some(3))
            .with_cache_capacity(capacity);
        let mut model = gpuchain_types::MemState::new();
        let reference = reference_roots(30);
        model.apply(genesis());
        for h in 1..=30 {
            let block = store.prepare(h, (h == 1).then(genesis), writes(h)).unwrap();
            assert_eq!(block.app_hash, reference[h as usize], "root at {h}");
            store.commit(block).unwrap();
            model.apply(writes(h));
            // Read every key twice: the first read may fill the cache, the second hits it.
            for _ in 0..2 {
                for k in 0..400 {
                    assert_eq!(
                        store.get_raw(&key(k)),
                        model.get_raw(&key(k)),
                        "key {k} at {h}, capacity {capacity}"
                    );
                }
            }
        }
        // A proof read through the node cache verifies against the root.
        let (value, proof) = store.get_with_proof(&key(5), 30).unwrap();
        proof
            .verify(
                jmt::RootHash(reference[30]),
                key_hash(&key(5)),
                value.as_deref(),
            )
            .unwrap();
    }
}

/// The model state after `height`: genesis and every block's writes up to it.
fn model_at(height: u64) -> Vec<(String, Vec<u8>)> {
    let mut model = gpuchain_types::MemState::new();
    model.apply(genesis());
    for h in 1..=height {
        model.apply(writes(h));
    }
    model
        .entries()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn every_kept_height_lists_its_whole_state_deleted_keys_included() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path())
        .unwrap()
        .with_proof_heights(Some(10));
    let roots = run(&mut store, 60);
    for height in 51..=60 {
        let state = store.state_at(height).unwrap();
        assert_eq!(state, model_at(height), "state at {height}");
        assert_eq!(store.root_at(height).unwrap(), roots[height as usize]);
    }
    // Blocks 51..=60 deleted keys that height 51 still held: listing it needed their names.
    let latest: std::collections::BTreeSet<String> =
        model_at(60).into_iter().map(|(k, _)| k).collect();
    assert!(model_at(51).iter().any(|(k, _)| !latest.contains(k)));
    let err = format!("{:#}", store.state_at(50).unwrap_err());
    assert!(
        err.contains("keeps the state of heights 51 and later"),
        "{err}"
    );
    let err = format!("{:#}", store.state_at(61).unwrap_err());
    assert!(err.contains("not committed here"), "{err}");
    // The deleted-key records leave with the heights that needed them.
    let deleted = cf(&store.db, CF_DELETED).unwrap();
    for item in store.db.iterator_cf(deleted, IteratorMode::Start) {
        let (k, _) = item.unwrap();
        let version = u64::from_be_bytes(k[..8].try_into().unwrap());
        assert!(version > 51, "a deletion at {version} outlived its heights");
    }
}

#[test]
fn a_restored_state_goes_on_with_the_same_roots_and_a_wrong_one_is_refused() {
    let (dir_a, dir_b, dir_c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let mut source = Store::open(dir_a.path()).unwrap();
    let roots = run(&mut source, 40);
    let snapshot = source.state_at(30).unwrap();

    let mut tampered = snapshot.clone();
    tampered[3].1.push(0);
    let mut refused = Store::open(dir_c.path()).unwrap();
    let err = format!(
        "{:#}",
        refused.restore(30, &tampered, roots[30]).unwrap_err()
    );
    assert!(err.contains("not to the trusted app hash"), "{err}");
    assert_eq!(refused.height(), 0);
    assert!(
        refused.prefix_raw("").is_empty(),
        "a refused snapshot wrote state"
    );

    let mut restored = Store::open(dir_b.path()).unwrap();
    restored.restore(30, &snapshot, roots[30]).unwrap();
    assert_eq!((restored.height(), restored.app_hash()), (30, roots[30]));
    let err = format!("{:#}", restored.get_at(&key(1), 29).unwrap_err());
    assert!(err.contains("pruned"), "{err}");
    for h in 31..=40 {
        let block = restored.prepare(h, None, writes(h)).unwrap();
        assert_eq!(block.app_hash, roots[h as usize], "root at {h}");
        restored.commit(block).unwrap();
    }
    assert_eq!(restored.state_at(40).unwrap(), model_at(40));
    let (value, proof) = restored.get_with_proof(&key(9), 35).unwrap();
    proof
        .verify(
            jmt::RootHash(roots[35]),
            key_hash(&key(9)),
            value.as_deref(),
        )
        .unwrap();
}

#[test]
fn a_chain_may_start_above_height_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.genesis_root(501, &genesis()).unwrap();
    assert_eq!(
        root,
        reference_roots(0)[0],
        "the root does not depend on the version"
    );
    let block = store.prepare(501, Some(genesis()), writes(1)).unwrap();
    assert_eq!(block.app_hash, reference_roots(1)[1]);
    store.commit(block).unwrap();
    assert_eq!(store.state_at(500).unwrap(), model_at(0));
    assert_eq!(store.state_at(501).unwrap(), model_at(1));
}

#[test]
fn a_bounded_prefix_read_is_the_front_of_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    run(&mut store, 12);
    let all = store.prefix_raw("bank/balances/");
    assert!(all.len() > 50);
    for end in [
        "bank/balances/",
        "bank/balances/0100",
        "bank/balances/0250",
        "bank/balances/9",
    ] {
        let front: Vec<_> = all
            .iter()
            .filter(|(k, _)| k.as_str() < end)
            .cloned()
            .collect();
        assert_eq!(
            store.prefix_until_raw("bank/balances/", end),
            front,
            "until {end}"
        );
    }
}

/// A height-keyed queue as the modules use one: every block reads what is due, deletes it
/// (or, now and then, leaves it for a later block), and enqueues entries a few heights
/// ahead, now and then one at a height already passed or a key under a neighbouring prefix.
/// The bounded read, which starts where the previous one found the queue's front, must
/// return what a whole-prefix read cut at the bound returns, block after block.
#[test]
fn a_queue_read_from_where_its_front_was_misses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let queue = "auction/clearing_queue/";
    let entry = |at: u64, id: u64| format!("{queue}{at:020}/{id:020}");
    let mut next_id = 0u64;
    let mut reads = 0;
    for height in 1..400u64 {
        let r = *blake3::hash(&height.to_le_bytes()).as_bytes();
        let end = format!("{queue}{:020}", height + 1);
        let expected: Vec<_> = store
            .prefix_raw(queue)
            .into_iter()
            .filter(|(k, _)| k.as_str() < end.as_str())
            .collect();
        let due = store.prefix_until_raw(queue, &end);
        assert_eq!(due, expected, "at height {height}");
        reads += due.len();
        let mut writes: Write = if r[12].is_multiple_of(4) {
            Write::new()
        } else {
            due.into_iter().map(|(k, _)| (k, None)).collect()
        };
        for i in 0..(r[0] % 6) {
            let at = height + u64::from(r[1 + usize::from(i)] % 5);
            writes.insert(entry(at, next_id), Some(vec![1]));
            next_id += 1;
        }
        if r[10].is_multiple_of(9) {
            writes.insert(entry(height.saturating_sub(30), next_id), Some(vec![2]));
            next_id += 1;
        }
        if r[11].is_multiple_of(13) {
            writes.insert(format!("auction/clearing_queue_x/{height}"), Some(vec![3]));
        }
        let genesis = (height == 1).then(Write::new);
        store
            .commit(store.prepare(height, genesis, writes).unwrap())
            .unwrap();
    }
    assert!(reads > 300, "the queue was exercised: {reads} entries read");
}

#[test]
fn a_prefix_bound_is_the_least_key_after_the_prefix() {
    assert_eq!(
        prefix_successor(b"auction/bids/"),
        b"auction/bids0".to_vec()
    );
    assert_eq!(prefix_successor(b"a\xff\xff"), b"b".to_vec());
    assert_eq!(prefix_successor(b"\xff"), Vec::<u8>::new());
    assert_eq!(prefix_successor(b""), Vec::<u8>::new());
}

/// Block 1's writes start from the genesis writes (the app executes it on top of them):
/// only what the block changed goes in its version, so the genesis nodes and values are
/// not all rewritten, and all pruned together once the proof window passes them.
#[test]
fn the_first_block_stores_only_what_it_changed_over_genesis() {
    let stores = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut with_genesis = Store::open(stores[0].path()).unwrap();
    let mut changes_only = Store::open(stores[1].path()).unwrap();
    let mut superset = genesis();
    superset.extend(writes(1));
    let a = with_genesis.prepare(1, Some(genesis()), superset).unwrap();
    let b = changes_only.prepare(1, Some(genesis()), writes(1)).unwrap();
    assert_eq!(a.app_hash, b.app_hash);
    with_genesis.commit(a).unwrap();
    changes_only.commit(b).unwrap();
    for family in [CF_NODES, CF_VALUES, CF_STALE] {
        assert_eq!(
            count(&with_genesis, family),
            count(&changes_only, family),
            "{family}"
        );
    }
    assert_eq!(
        with_genesis.state_at(1).unwrap(),
        changes_only.state_at(1).unwrap()
    );
}
