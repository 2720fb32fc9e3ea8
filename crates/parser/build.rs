//! With `--features regenerate` (`scripts/gen_parser.sh`): regenerates
//! `src/grammar.rs` from `src/grammar.lalrpop` with lalrpop, and writes the
//! grammar's fingerprint beside it (`src/grammar.fingerprint`), which a unit
//! test compares with the grammar so that an edit not regenerated fails.
//! Without the feature (every ordinary build) it does nothing: the
//! generated parser is committed.

#[cfg(feature = "regenerate")]
include!("src/fingerprint.rs");

fn main() {
    #[cfg(feature = "regenerate")]
    {
        println!("cargo:rerun-if-changed=src/grammar.lalrpop");
        let grammar = std::path::Path::new("src/grammar.lalrpop");
        if let Err(e) = lalrpop::Configuration::new().set_out_dir("src").process_file(grammar) {
            eprintln!("{e}");
            std::process::exit(1);
        }
        let text = std::fs::read(grammar).expect("src/grammar.lalrpop is readable");
        std::fs::write("src/grammar.fingerprint", format!("{:016x}\n", fingerprint(&text)))
            .expect("src/grammar.fingerprint is writable");
    }
}
