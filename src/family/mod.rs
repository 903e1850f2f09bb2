//! Kernel families: the space expression language ([`expr`]), parameter spaces and their
//! pruning ([`space`]), the catalog of templates with their instantiation ([`catalog`]),
//! covering sets of a space's configs ([`covering`]), the maths a family may compute with
//! ([`math`]), the fingerprints that make a family's identity survive a refactor
//! ([`fingerprint`], with their [`probe`]s).

pub mod catalog;
pub mod covering;
pub mod expr;
pub mod fingerprint;
pub mod math;
pub mod probe;
pub mod space;
