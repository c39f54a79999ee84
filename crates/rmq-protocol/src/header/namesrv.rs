//! Nameserver headers: broker registration, routes, KV config, write permission.

command_header! {
    /// `GetRouteInfoRequestHeader` (GET_ROUTEINFO_BY_TOPIC, 105).
    pub struct GetRouteInfoRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// The client wants standard JSON (quoted map keys) whatever its version.
        accept_standard_json_only: optional<bool> = "acceptStandardJsonOnly",
    }
}

command_header! {
    /// `RegisterBrokerRequestHeader` (REGISTER_BROKER, 103); the body is a
    /// [`crate::body::RegisterBrokerBody`].
    pub struct RegisterBrokerRequestHeader {
        /// Broker name (shared by master and slaves).
        broker_name: required<String> = "brokerName",
        /// Address clients connect to.
        broker_addr: required<String> = "brokerAddr",
        /// Cluster.
        cluster_name: required<String> = "clusterName",
        /// HA listen address.
        ha_server_addr: required<String> = "haServerAddr",
        /// 0 = master, > 0 = slave.
        broker_id: required<i64> = "brokerId",
        /// Body is deflate-compressed (`RegisterBrokerBody.encode(true)`).
        compressed: defaulted<bool> = "compressed",
        /// CRC32 of the body (0 = not checked).
        body_crc32: defaulted<i32> = "bodyCrc32",
    }
}

command_header! {
    /// `RegisterBrokerResponseHeader`: where a slave finds its master.
    pub struct RegisterBrokerResponseHeader {
        /// Master's HA address.
        ha_server_addr: optional<String> = "haServerAddr",
        /// Master's address.
        master_addr: optional<String> = "masterAddr",
    }
}

command_header! {
    /// `UnRegisterBrokerRequestHeader` (UNREGISTER_BROKER, 104).
    pub struct UnRegisterBrokerRequestHeader {
        /// Broker name.
        broker_name: required<String> = "brokerName",
        /// Broker address.
        broker_addr: required<String> = "brokerAddr",
        /// Cluster.
        cluster_name: required<String> = "clusterName",
        /// Broker id.
        broker_id: required<i64> = "brokerId",
    }
}

command_header! {
    /// `QueryDataVersionRequestHeader` (QUERY_DATA_VERSION, 322); the body is the broker's
    /// DataVersion.
    pub struct QueryDataVersionRequestHeader {
        /// Broker name.
        broker_name: required<String> = "brokerName",
        /// Broker address.
        broker_addr: required<String> = "brokerAddr",
        /// Cluster.
        cluster_name: required<String> = "clusterName",
        /// Broker id.
        broker_id: required<i64> = "brokerId",
    }
}

command_header! {
    /// `QueryDataVersionResponseHeader`.
    pub struct QueryDataVersionResponseHeader {
        /// The nameserver's copy differs: register again.
        changed: required<bool> = "changed",
    }
}

command_header! {
    /// `WipeWritePermOfBrokerRequestHeader` (WIPE_WRITE_PERM_OF_BROKER, 205).
    pub struct WipeWritePermOfBrokerRequestHeader {
        /// Broker name.
        broker_name: required<String> = "brokerName",
    }
}

command_header! {
    /// `WipeWritePermOfBrokerResponseHeader`.
    pub struct WipeWritePermOfBrokerResponseHeader {
        /// Topics made read-only.
        wipe_topic_count: required<i32> = "wipeTopicCount",
    }
}

command_header! {
    /// `AddWritePermOfBrokerRequestHeader` (ADD_WRITE_PERM_OF_BROKER, 327).
    pub struct AddWritePermOfBrokerRequestHeader {
        /// Broker name.
        broker_name: required<String> = "brokerName",
    }
}

command_header! {
    /// `AddWritePermOfBrokerResponseHeader`.
    pub struct AddWritePermOfBrokerResponseHeader {
        /// Topics made writable again.
        add_topic_count: required<i32> = "addTopicCount",
    }
}

command_header! {
    /// `PutKVConfigRequestHeader` (PUT_KV_CONFIG, 100).
    pub struct PutKvConfigRequestHeader {
        /// Namespace (e.g. `ORDER_TOPIC_CONFIG`).
        namespace: required<String> = "namespace",
        /// Key.
        key: required<String> = "key",
        /// Value.
        value: required<String> = "value",
    }
}

command_header! {
    /// `GetKVConfigRequestHeader` (GET_KV_CONFIG, 101).
    pub struct GetKvConfigRequestHeader {
        /// Namespace.
        namespace: required<String> = "namespace",
        /// Key.
        key: required<String> = "key",
    }
}

command_header! {
    /// `GetKVConfigResponseHeader`.
    pub struct GetKvConfigResponseHeader {
        /// Value, if the key exists.
        value: optional<String> = "value",
    }
}

command_header! {
    /// `DeleteKVConfigRequestHeader` (DELETE_KV_CONFIG, 102).
    pub struct DeleteKvConfigRequestHeader {
        /// Namespace.
        namespace: required<String> = "namespace",
        /// Key.
        key: required<String> = "key",
    }
}

command_header! {
    /// `GetKVListByNamespaceRequestHeader` (GET_KVLIST_BY_NAMESPACE, 219).
    pub struct GetKvListByNamespaceRequestHeader {
        /// Namespace.
        namespace: required<String> = "namespace",
    }
}

command_header! {
    /// `DeleteTopicFromNamesrvRequestHeader` (DELETE_TOPIC_IN_NAMESRV, 216).
    pub struct DeleteTopicFromNamesrvRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Only in this cluster, if set.
        cluster_name: optional<String> = "clusterName",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn register_broker_round_trip() {
        let r = RegisterBrokerRequestHeader {
            broker_name: "broker-a".into(),
            broker_addr: "127.0.0.1:10911".into(),
            cluster_name: "DefaultCluster".into(),
            ha_server_addr: "127.0.0.1:10912".into(),
            broker_id: 0,
            compressed: false,
            body_crc32: -123,
        };
        let ext = r.to_ext_fields();
        assert_eq!(&ext["bodyCrc32"], "-123");
        assert_eq!(&ext["compressed"], "false");
        assert_eq!(
            RegisterBrokerRequestHeader::from_ext_fields(&ext).unwrap(),
            r
        );
        let resp = RegisterBrokerResponseHeader::default();
        assert!(resp.to_ext_fields().is_empty());
        let u = UnRegisterBrokerRequestHeader {
            broker_name: "b".into(),
            broker_addr: "a".into(),
            cluster_name: "c".into(),
            broker_id: 1,
        };
        assert_eq!(
            UnRegisterBrokerRequestHeader::from_ext_fields(&u.to_ext_fields()).unwrap(),
            u
        );
    }

    #[test]
    fn kv_and_route_round_trip() {
        let p = PutKvConfigRequestHeader {
            namespace: "ns".into(),
            key: "k".into(),
            value: "v".into(),
        };
        assert_eq!(
            PutKvConfigRequestHeader::from_ext_fields(&p.to_ext_fields()).unwrap(),
            p
        );
        let g = GetRouteInfoRequestHeader {
            topic: "t".into(),
            accept_standard_json_only: None,
        };
        assert_eq!(g.to_ext_fields().len(), 1);
        assert_eq!(
            GetRouteInfoRequestHeader::from_ext_fields(&g.to_ext_fields()).unwrap(),
            g
        );
        let w = WipeWritePermOfBrokerResponseHeader {
            wipe_topic_count: 3,
        };
        assert_eq!(
            WipeWritePermOfBrokerResponseHeader::from_ext_fields(&w.to_ext_fields()).unwrap(),
            w
        );
    }
}
