//! The producer-consumer graph of the blocks in one scope, and its getters:
//! `get_producers(block)` and `get_consumers(block)`.
//!
//! A node per block of the scope (the blocks directly under the scope's
//! block, in program order); an edge from a block that writes a buffer to
//! each later block that reads it. The getters return a block's neighbours
//! in program order, as TVM does.

use super::cache::top_level_owner;
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::tree::child_blocks;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use tirc_ir::region::block_buffers;
use tirc_ir::{BlockRealize, Buffer, IterKind, PrimFunc, Stmt};

/// The blocks of a scope and who feeds whom.
pub struct DepGraph {
    pub graph: DiGraph<String, Buffer>,
    pub nodes: Vec<NodeIndex>,
}

impl DepGraph {
    /// The graph of the scope that holds `block`.
    pub fn of_scope(root: &Stmt, block: &str) -> Result<DepGraph> {
        let owner = top_level_owner(root, block)
            .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?;
        let scope = root
            .find_block(&owner)
            .ok_or_else(|| ScheduleError::not_found(format!("the scope of block `{block}` is not in the function")))?;
        let scope_stmt = Stmt::Block(Box::new(scope.clone()));
        let blocks: Vec<BlockRealize> =
            child_blocks(&scope_stmt).into_iter().filter(|b| b.block.name != owner).cloned().collect();
        let mut graph = DiGraph::new();
        let nodes: Vec<NodeIndex> = blocks.iter().map(|b| graph.add_node(b.block.name.clone())).collect();
        for (i, p) in blocks.iter().enumerate() {
            let writes = block_buffers(p, false);
            for (j, c) in blocks.iter().enumerate().skip(i + 1) {
                for buf in block_buffers(c, true).into_iter().filter(|b| writes.contains(b)) {
                    graph.add_edge(nodes[i], nodes[j], buf);
                }
            }
        }
        Ok(DepGraph { graph, nodes })
    }

    fn neighbours(&self, block: &str, dir: Direction) -> Vec<BlockRV> {
        let Some(&n) = self.nodes.iter().find(|&&n| self.graph[n] == block) else { return vec![] };
        let mut out: Vec<NodeIndex> = self.graph.neighbors_directed(n, dir).collect();
        out.sort();
        out.dedup();
        out.into_iter().map(|x| self.graph[x].clone()).collect()
    }
}

pub fn get_producers(sch: &Schedule, block: &BlockRV) -> Result<Vec<BlockRV>> {
    Ok(DepGraph::of_scope(&sch.func.body, block)?.neighbours(block, Direction::Incoming))
}

pub fn get_consumers(sch: &Schedule, block: &BlockRV) -> Result<Vec<BlockRV>> {
    Ok(DepGraph::of_scope(&sch.func.body, block)?.neighbours(block, Direction::Outgoing))
}

/// The block dependence graph of `f` in Graphviz's DOT: a box per block
/// (its name and iteration kinds, `S`/`R`/`O`), a solid edge from a block
/// to each later block of its scope that reads what it writes (labelled
/// with the buffer), a dashed edge from a block to the blocks nested in it;
/// the function's parameters are ellipses, read by the blocks that read
/// them and written by those that write them.
pub fn dot(f: &PrimFunc) -> String {
    use petgraph::dot::{Config, Dot};
    #[derive(Clone, Debug)]
    enum Edge {
        Flow(String),
        Nests,
    }
    let mut graph: DiGraph<String, Edge> = DiGraph::new();
    let blocks = f.body.blocks();
    let node_of: Vec<NodeIndex> = blocks
        .iter()
        .map(|r| {
            let kinds: String = r
                .block
                .iter_vars
                .iter()
                .map(|iv| match iv.kind {
                    IterKind::Spatial => 'S',
                    IterKind::Reduce => 'R',
                    IterKind::Opaque => 'O',
                })
                .collect();
            let label = if kinds.is_empty() { r.block.name.clone() } else { format!("{} [{kinds}]", r.block.name) };
            graph.add_node(label)
        })
        .collect();
    let index = |name: &str| blocks.iter().position(|r| r.block.name == name);
    let params: Vec<NodeIndex> = f.params.iter().map(|b| graph.add_node(format!("param {}", b.name()))).collect();
    for (i, r) in blocks.iter().enumerate() {
        let scope = Stmt::Block(Box::new((*r).clone()));
        let children = child_blocks(&scope);
        for c in &children {
            if let Some(j) = index(&c.block.name) {
                graph.add_edge(node_of[i], node_of[j], Edge::Nests);
            }
        }
        for (a, p) in children.iter().enumerate() {
            let writes = block_buffers(p, false);
            for c in children.iter().skip(a + 1) {
                for buf in block_buffers(c, true).into_iter().filter(|b| writes.contains(b)) {
                    if let (Some(x), Some(y)) = (index(&p.block.name), index(&c.block.name)) {
                        graph.add_edge(node_of[x], node_of[y], Edge::Flow(buf.name().to_string()));
                    }
                }
            }
        }
        // Parameters, at the blocks that touch them (leaves, so that a
        // buffer is drawn once where it is used, not at every scope above).
        if children.is_empty() {
            for (k, b) in f.params.iter().enumerate() {
                if block_buffers(r, true).contains(b) {
                    graph.add_edge(params[k], node_of[i], Edge::Flow(b.name().to_string()));
                }
                if block_buffers(r, false).contains(b) {
                    graph.add_edge(node_of[i], params[k], Edge::Flow(b.name().to_string()));
                }
            }
        }
    }
    let edge_attrs = |_: &DiGraph<String, Edge>, e: petgraph::graph::EdgeReference<'_, Edge>| match e.weight() {
        Edge::Flow(b) => format!("label = \"{b}\""),
        Edge::Nests => "style = dashed, arrowhead = none".to_string(),
    };
    let node_attrs = |_: &DiGraph<String, Edge>, (_, label): (NodeIndex, &String)| match label.strip_prefix("param ") {
        Some(name) => format!("label = \"{name}\", shape = ellipse"),
        None => format!("label = \"{label}\", shape = box"),
    };
    let body = format!(
        "{:?}",
        Dot::with_attr_getters(&graph, &[Config::EdgeNoLabel, Config::NodeNoLabel], &edge_attrs, &node_attrs)
    );
    body.replacen("digraph {", &format!("digraph \"{}\" {{\n    rankdir = LR", f.name), 1)
}
