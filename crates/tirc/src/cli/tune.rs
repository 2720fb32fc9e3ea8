//! `tirc tune FILE --schedule S`: the command lives in the library
//! (`crate::tune::cli`), so that the tests can run it in-process; this file
//! hands it the process's streams.

pub fn main(a: crate::tune::cli::Args) -> u8 {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr();
    crate::tune::cli::main(a, &mut out, &mut err)
}
