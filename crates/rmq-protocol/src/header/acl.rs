//! Headers of the ACL admin requests (UPDATE_AND_CREATE_ACL_CONFIG 50, DELETE_ACL_CONFIG 51,
//! GET_BROKER_CLUSTER_ACL_INFO 52, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG 53), field for field as
//! RocketMQ 4.9.7's classes. Lists (`topicPerms`, `groupPerms`, `globalWhiteAddrs`) travel as
//! comma-separated text.

command_header! {
    /// `CreateAccessConfigRequestHeader` (UPDATE_AND_CREATE_ACL_CONFIG, 50).
    pub struct CreateAccessConfigRequestHeader {
        /// The account.
        access_key: required<String> = "accessKey",
        /// Its secret (kept as it is when absent on an update).
        secret_key: optional<String> = "secretKey",
        /// Address pattern allowed without a signature.
        white_remote_address: optional<String> = "whiteRemoteAddress",
        /// Admin account.
        admin: defaulted<bool> = "admin",
        /// DENY, PUB, SUB or PUB|SUB.
        default_topic_perm: optional<String> = "defaultTopicPerm",
        /// DENY, PUB, SUB or PUB|SUB.
        default_group_perm: optional<String> = "defaultGroupPerm",
        /// `topic=PERM` items, comma-separated.
        topic_perms: optional<String> = "topicPerms",
        /// `group=PERM` items, comma-separated.
        group_perms: optional<String> = "groupPerms",
    }
}

command_header! {
    /// `DeleteAccessConfigRequestHeader` (DELETE_ACL_CONFIG, 51).
    pub struct DeleteAccessConfigRequestHeader {
        /// The account.
        access_key: required<String> = "accessKey",
    }
}

command_header! {
    /// `UpdateGlobalWhiteAddrsConfigRequestHeader` (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, 53).
    pub struct UpdateGlobalWhiteAddrsConfigRequestHeader {
        /// Address patterns, comma-separated.
        global_white_addrs: required<String> = "globalWhiteAddrs",
        /// The ACL file to change (RocketMQ 4.9.7 marks it required; clients may leave it
        /// empty for the broker's file).
        acl_file_full_path: optional<String> = "aclFileFullPath",
    }
}

command_header! {
    /// `GetBrokerAclConfigResponseHeader` (GET_BROKER_CLUSTER_ACL_INFO, 52).
    pub struct GetBrokerAclConfigResponseHeader {
        /// The DataVersion of the ACL file, as JSON.
        version: required<String> = "version",
        /// Every ACL file's DataVersion, as a JSON object keyed by path.
        all_acl_file_version: optional<String> = "allAclFileVersion",
        /// `brokerName`.
        broker_name: required<String> = "brokerName",
        /// `brokerIP1:listenPort`.
        broker_addr: required<String> = "brokerAddr",
        /// `brokerClusterName`.
        cluster_name: required<String> = "clusterName",
    }
}
