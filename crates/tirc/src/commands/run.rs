//! `tirc run FILE`: placeholder replaced below.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: super::Common,
}
pub fn main(_a: Args) -> u8 {
    super::FAIL
}
