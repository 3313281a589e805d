//! The C interface as cometbft-gpuchain's Go side uses it: nothing is answered before the
//! app is open, a bad home is refused with its reason, an opened app answers a
//! length-prefixed `Info`, and a run of requests with every answer in order, and garbage, a
//! request cut short, a second open or a request of the wrong kind become errors, never a
//! panic across the boundary. One test, since the library holds one app a process.

// Calling a C interface is unsafe; each call below says what it relies on.
#![allow(unsafe_code)]

use gpuchain_inprocess::{gpuchain_call, gpuchain_free, gpuchain_open, GpuchainBuf};
use gpuchain_node::localnet::{Localnet, LocalnetSpec};
use prost::Message;
use tendermint_proto::v0_38::abci::{
    request, response, Request, RequestCheckTx, RequestInfo, Response,
};

/// Calls `f` with an output buffer and returns its code and the bytes it handed back.
fn with_out(f: impl FnOnce(*mut GpuchainBuf) -> i32) -> (i32, Vec<u8>) {
    let mut out = GpuchainBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
        cap: 0,
    };
    let code = f(&mut out);
    let bytes = if out.ptr.is_null() {
        Vec::new()
    } else {
        // SAFETY: `out` was filled by the library and is freed once, after copying.
        unsafe { std::slice::from_raw_parts(out.ptr, out.len) }.to_vec()
    };
    // SAFETY: as above.
    unsafe { gpuchain_free(out) };
    (code, bytes)
}

fn open(home: &str) -> (i32, String) {
    // SAFETY: `home` is live for the call and `out` is writable.
    let (code, bytes) = with_out(|out| unsafe { gpuchain_open(home.as_ptr(), home.len(), out) });
    (code, String::from_utf8(bytes).unwrap())
}

fn call(request: &[u8]) -> (i32, Vec<u8>) {
    // SAFETY: `request` is live for the call and `out` is writable.
    with_out(|out| unsafe { gpuchain_call(request.as_ptr(), request.len(), out) })
}

fn info() -> Vec<u8> {
    Request {
        value: Some(request::Value::Info(RequestInfo::default())),
    }
    .encode_length_delimited_to_vec()
}

fn check(tx: &[u8]) -> Vec<u8> {
    Request {
        value: Some(request::Value::CheckTx(RequestCheckTx {
            tx: tx.to_vec().into(),
            r#type: 0,
        })),
    }
    .encode_length_delimited_to_vec()
}

fn answers(mut bytes: &[u8]) -> Vec<response::Value> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        out.push(
            Response::decode_length_delimited(&mut bytes)
                .unwrap()
                .value
                .unwrap(),
        );
    }
    out
}

#[test]
fn the_c_interface_answers_abci_requests_and_refuses_misuse() {
    let (code, reason) = call(&info());
    assert_eq!(code, 1);
    assert_eq!(String::from_utf8(reason).unwrap(), "the app is not open");

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let (code, reason) = open(missing.to_str().unwrap());
    assert_eq!(code, 1);
    assert!(reason.contains("app.toml"), "{reason}");

    let mut spec = LocalnetSpec::new(dir.path().join("net"));
    spec.validators = 1;
    let net = Localnet::build(&spec).unwrap();
    let home = net.nodes[0].app_home.to_str().unwrap().to_string();
    assert_eq!(
        open(&home),
        (0, String::new()),
        "nothing to say, and no buffer"
    );

    let (code, bytes) = call(&info());
    assert_eq!(code, 0);
    match answers(&bytes).as_slice() {
        [response::Value::Info(i)] => {
            assert_eq!(i.last_block_height, 0, "a fresh chain");
            assert!(!i.version.is_empty());
        }
        other => panic!("{other:?}"),
    }

    // Checks go through together; an Info between them is answered in its place.
    let run = [check(b"not a tx"), check(b""), info(), check(&[7; 192])].concat();
    let (code, bytes) = call(&run);
    assert_eq!(code, 0);
    match answers(&bytes).as_slice() {
        [response::Value::CheckTx(a), response::Value::CheckTx(b), response::Value::Info(_), response::Value::CheckTx(c)] => {
            for c in [a, b, c] {
                assert_ne!(c.code, 0, "garbage is not a transaction");
                assert_eq!(c.codespace, "tx");
            }
        }
        other => panic!("{other:?}"),
    }

    let (code, reason) = call(&[0xff, 0xff, 0xff]);
    assert_eq!(code, 1);
    assert!(String::from_utf8(reason).unwrap().contains("not whole"));
    let (code, reason) = call(&check(&[7; 192])[..50]);
    assert_eq!(code, 1, "a request cut short");
    assert!(String::from_utf8(reason).unwrap().contains("not whole"));
    let (code, reason) = call(&[]);
    assert_eq!(code, 1, "no request at all");
    assert!(String::from_utf8(reason).unwrap().contains("not whole"));
    let (code, reason) = call(&[2, 0xff, 0xff]);
    assert_eq!(code, 1);
    assert!(String::from_utf8(reason).unwrap().contains("decoding"));

    let (code, bytes) = call(&Request { value: None }.encode_length_delimited_to_vec());
    assert_eq!(code, 0);
    assert!(matches!(
        answers(&bytes).as_slice(),
        [response::Value::Exception(_)]
    ));

    let (code, reason) = open(&home);
    assert_eq!((code, reason.as_str()), (1, "the app is already open"));
}
