//! What a product links: the runtime ([`runtime`], [`crate::Tuned`]), the lookup that picks a
//! config for a shape ([`lookup`]) with its predictor for untuned shapes ([`select`]), and the
//! exports (CUDA header, cubin) ([`export`]).

pub mod export;
pub mod lookup;
pub mod runtime;
pub mod select;
