//! What a product links: the runtime ([`runtime`], [`crate::Tuned`]), the lookup that picks a
//! config for a shape ([`lookup`]) with its predictor for untuned shapes ([`select`]), the
//! exports (CUDA header, cubin) ([`export`]), and the opt-in recording of the shapes a product
//! calls ([`record`]).

pub mod export;
pub mod lookup;
pub mod record;
pub mod runtime;
pub mod select;
