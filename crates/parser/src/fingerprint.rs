/// FNV-1a over `bytes`: the fingerprint of the grammar that `grammar.rs`
/// was generated from (`build.rs` writes it, a unit test checks it).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
