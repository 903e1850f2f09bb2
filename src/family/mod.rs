//! Kernel families: the space expression language ([`expr`]), parameter spaces and their
//! pruning ([`space`]), and the catalog of templates with their instantiation ([`catalog`]).

pub mod catalog;
pub mod expr;
pub mod space;
