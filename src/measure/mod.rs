//! What makes a number trustworthy, with no GPU: outcomes of one candidate ([`outcome`]), the
//! timing policy and statistics ([`timing`]), the reference and its tolerance ([`verify`]).

pub mod outcome;
pub mod timing;
pub mod verify;
