//! The producer-consumer graph of the blocks in one scope, and its getters:
//! `get_producers(block)` and `get_consumers(block)`.
//!
//! A node per block of the scope (the blocks directly under the scope's
//! block, in program order); an edge from a block that writes a buffer to
//! each later block that reads it. The getters return a block's neighbours
//! in program order, as TVM does.

use super::cache::{regions, top_level_owner};
use super::tree::{child_blocks, find_block};
use super::{BlockRV, Result, Schedule, ScheduleError};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use tirc_ir::{BlockRealize, Buffer, Stmt};

/// The blocks of a scope and who feeds whom.
pub struct DepGraph {
    pub graph: DiGraph<String, Buffer>,
    pub nodes: Vec<NodeIndex>,
}

impl DepGraph {
    /// The graph of the scope that holds `block`.
    pub fn of_scope(root: &Stmt, block: &str) -> Result<DepGraph> {
        let owner = top_level_owner(root, block)
            .ok_or_else(|| ScheduleError::new(format!("block `{block}` is no longer in the function")))?;
        let scope = find_block(root, &owner)
            .ok_or_else(|| ScheduleError::new(format!("the scope of block `{block}` is not in the function")))?;
        let scope_stmt = Stmt::Block(Box::new(scope.clone()));
        let blocks: Vec<BlockRealize> =
            child_blocks(&scope_stmt).into_iter().filter(|b| b.block.name != owner).cloned().collect();
        let mut graph = DiGraph::new();
        let nodes: Vec<NodeIndex> = blocks.iter().map(|b| graph.add_node(b.block.name.clone())).collect();
        for (i, p) in blocks.iter().enumerate() {
            let writes = regions(p, false);
            for (j, c) in blocks.iter().enumerate().skip(i + 1) {
                for buf in regions(c, true).into_iter().filter(|b| writes.contains(b)) {
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
