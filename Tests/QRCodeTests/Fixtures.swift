// Expected symbols, made with the Python package qrcode 8.2 (`pip install qrcode`; not a dependency of the tests)
// by tools/qrcode-fixtures, in essence:
//
//     for m in range(8):
//         q = qrcode.QRCode(error_correction=LEVEL, border=0, mask_pattern=m)
//         q.add_data(qrcode.util.QRData(text.encode("utf-8"), mode=qrcode.util.MODE_8BIT_BYTE)); q.make(fit=True)
//     keep the q with the lowest qrcode.util.lost_point(q.modules), the first of those that tie
//
// that is, qrcode's smallest version, its symbol for each fixed mask, and its own penalty rules (ISO/IEC 18004
// section 7.8.3) applied to the finished symbols, whose format information names the mask. (qrcode's own mask
// choice scores the symbols with the format and version information left light, so it can pick another mask; where
// it does, the comment says so, and that symbol is kept too.) Each row is one module row, dark = 1, as hex, left-aligned and padded with zero
// bits to a multiple of 4.

import Testing

@testable import QRCode

struct Fixture: CustomTestStringConvertible {
    let text: String
    let correction: QRCode.ErrorCorrection
    let version: Int
    /// The mask of the lowest qrcode.util.lost_point.
    let mask: Int
    /// qrcode.util.lost_point of the finished symbols with masks 0 to 7.
    let penalties: [Int]
    /// Rows of the symbols made with some masks: `mask`, qrcode's own choice where it differs, and all eight for
    /// the smallest case.
    let symbols: [Int: String]

    var testDescription: String { "\(text.utf8.count) bytes at \(correction)" }

    /// The modules of the symbol with `mask`, true = dark, indexed [y][x].
    func modules(mask: Int) -> [[Bool]] {
        let size = 17 + 4 * version
        return symbols[mask]!.split(separator: "\n").map { row in
            let bits = row.flatMap { hexDigit in
                let value = Int(String(hexDigit), radix: 16)!
                return (0..<4).map { value >> (3 - $0) & 1 == 1 }
            }
            return Array(bits.prefix(size))
        }
    }
}

enum Fixtures {
    /// 1 bytes at M: version 1, mask 5.
    static let a = Fixture(
        text: "a",
        correction: .medium,
        version: 1,
        mask: 5,
        penalties: [526, 524, 348, 402, 340, 308, 413, 487],
        symbols: [
            0: """
            fe0bf8
            82ea08
            ba32e8
            ba4ae8
            baaae8
            826a08
            feabf8
            001800
            aa5090
            65e230
            168888
            80c220
            868aa8
            009558
            fe1778
            825dc0
            ba9768
            ba0230
            ba8888
            826230
            fecab8
            """,
            1: """
            fedbf8
            823a08
            bae2e8
            ba1ae8
            ba7ae8
            82ba08
            feabf8
            004800
            a30128
            30b760
            43ddd8
            d59770
            d3dff8
            00c008
            fec228
            820890
            ba4238
            ba5760
            baddd8
            823760
            fe9fe8
            """,
            2: """
            fe6bf8
            827208
            bad2e8
            bad2e8
            bacae8
            82f208
            feabf8
            008000
            be33e0
            a0fe40
            2e6b00
            45de50
            be6920
            008928
            fe74f0
            82c1b0
            baf4e0
            ba9e40
            baeb00
            827e40
            fea930
            """,
            3: """
            feebf8
            82aa08
            ba3ae8
            bad2e8
            ba12e8
            821a08
            feabf8
            00d800
            b75a58
            a0fe40
            9ab068
            9cb3e0
            be6920
            00d240
            fe9940
            82c1b0
            ba2f88
            baf3f0
            baeb00
            822528
            fec480
            """,
            4: """
            feabf8
            823208
            ba6ae8
            baeae8
            ba8ae8
            82b208
            feabf8
            00b800
            8bf7c8
            d13958
            a253e0
            c9e6b0
            cfae38
            00ce30
            fecc10
            827950
            bab3f8
            ba5958
            ba53e0
            8246a0
            feee28
            """,
            5: """
            fe5bf8
            82b208
            bad2e8
            bab2e8
            ba4ae8
            823208
            feabf8
            00c000
            82b670
            981dc8
            2e6b00
            559f50
            d3dff8
            00c828
            fe74f0
            822238
            ba74e0
            ba5f40
            ba5dd8
            823f40
            fea930
            """,
            6: """
            fedbf8
            82b208
            baf2e8
            ba32e8
            badae8
            820208
            feabf8
            004000
            9f94b8
            981dc8
            0af948
            59af90
            d3dff8
            00ce30
            fed060
            82a238
            bae6a8
            baef80
            ba5dd8
            823958
            fe8da0
            """,
            7: """
            fe0bf8
            824a08
            ba22e8
            ba4ae8
            ba0ae8
            82fa08
            feabf8
            003800
            96c500
            65e230
            5fac18
            a45068
            868aa8
            00b1c8
            fe0530
            82ddc0
            ba33f8
            ba9078
            ba0888
            8246a0
            fed8f0
            """,
        ]
    )

    /// 59 bytes at M: version 4, mask 4.
    /// (qrcode's own choice is mask 7, scoring with the format information left light.)
    static let signInURL = Fixture(
        text: "https://sp.auth.adobe.com/api/v2/authenticate/REF30/ABC1234",
        correction: .medium,
        version: 4,
        mask: 4,
        penalties: [922, 1001, 729, 780, 714, 818, 900, 836],
        symbols: [
            4: """
            feb72b3f8
            820eb2208
            ba53edae8
            bae0e32e8
            baf8f12e8
            82a152a08
            feaaaabf8
            00c25f800
            8bc14e7c8
            c181a5470
            b6a781e50
            2cfdd5218
            7f341a2c0
            40a62f120
            2a8987e90
            716367680
            c6cedcad0
            4059a1070
            f6af0b540
            0559fe908
            1308e3ad8
            b1994d570
            1e0729990
            359cf6718
            e3e05efd0
            008ba08a0
            feab44ac0
            82146d888
            bab5f2fc8
            ba4948be0
            ba37e77c0
            825efda00
            feee7fa08
            """,
            7: """
            fe13b93f8
            82714da08
            ba1ac92e8
            ba44712e8
            ba78f12e8
            82e876208
            feaaaabf8
            00425f800
            96f795500
            755ac8f18
            4b587e1a8
            414b0e4c0
            361088650
            bd59d0ed8
            bac0a37b0
            3847f5210
            c6cedcad0
            d01085950
            427466e28
            0559fe908
            7ebe38c00
            054220e18
            e3f8d6668
            582a2d1c0
            aac4ccfc0
            00f45f8d8
            fe6260ae0
            82b0ff898
            ba35f2fc8
            ba806c2c0
            ba6c8aca8
            825efda00
            fed8a4cd0
            """,
        ]
    )

    /// 100 bytes at M: version 6, mask 2.
    static let url100 = Fixture(
        text: "https://sp.auth.adobe.com/api/v2/authenticate/REF30/ABC1234?redirect_url=https%3"
            + "A%2F%2Fexample.com/x",
        correction: .medium,
        version: 6,
        mask: 2,
        penalties: [1304, 1476, 919, 933, 1200, 1312, 1266, 1335],
        symbols: [
            2: """
            fe219bafbf8
            8216a2baa08
            bace0622ae8
            baa6abd4ae8
            baa9538bae8
            828dca36a08
            feaaaaaabf8
            00dd1618800
            be61c2fcbe0
            1cdab949ab8
            732aaa98910
            450b363b8c0
            e26c66f5d70
            9c4f2b8ba90
            6f1b7630c00
            04351e1abd8
            4601fba4530
            05d4796bb88
            bec7c4fa4e0
            4427ed99680
            ee750cfcc70
            2d6cf54bed8
            42be0092840
            49f29c0a590
            6711e2ce560
            d5c87d0f2d0
            baddc05ac00
            ac0a1cb3ec8
            37c99ef5170
            a954214fdb0
            a62c0c72740
            98ad8531f00
            a7746b74fb0
            00de9b2d898
            fe77a251ac0
            82968821888
            babba674fe8
            baf04d4dd18
            badace7dfa0
            82186e9aad0
            fea460f5380
            """
        ]
    )

    /// 100 bytes at Q: version 8, mask 4.
    static let url100Q = Fixture(
        text: "https://sp.auth.adobe.com/api/v2/authenticate/REF30/ABC1234?redirect_url=https%3"
            + "A%2F%2Fexample.com/x",
        correction: .quartile,
        version: 8,
        mask: 4,
        penalties: [1785, 1624, 1771, 1892, 1550, 2015, 1695, 1761],
        symbols: [
            4: """
            fe2ada7b48bf8
            824a6399aba08
            ba88c2d499ae8
            ba3ab54b152e8
            baa683f3c82e8
            82f90224ce208
            feaaaaaaaabf8
            00430e2957800
            4aa5b7f3c8da0
            3d58a096cb368
            facf6a001e260
            ece9266db81f8
            d3908511c8ae8
            043b2cce9e760
            fac0ee25133a0
            7ccc16939f0b0
            7b93c848b8ff8
            302d8dcc6b2a0
            3204de7462760
            7d601df79fdb0
            cbedf573a9af8
            311e9fd35f7e0
            0f9a5be743f80
            c8a22e2bcf8b0
            5afa26a5daab8
            68fbfe371e8a0
            efaa43ff52fe0
            f8516e35e8b20
            2384b912ba528
            8ca89e42d2880
            82fce13777800
            dc38c9da687f8
            2b69cbdc3ce68
            712ef54f522e8
            6b23cbc3ca820
            952bef80f46a0
            3aecd611baa28
            8d85005757590
            46362f6f77560
            71bb0ec4fea20
            e29153f6dafb8
            00d6b2329f8c0
            fe5d5aa922ae0
            8279d63a7f8a0
            bac267f0d8fe8
            ba61a45ecaf00
            ba70bc8706d40
            82d2ac659f130
            fe7044d6f9cb8
            """
        ]
    )

    /// 100 bytes at H: version 10, mask 2.
    /// (qrcode's own choice is mask 6, scoring with the format information left light.)
    static let url100H = Fixture(
        text: "https://sp.auth.adobe.com/api/v2/authenticate/REF30/ABC1234?redirect_url=https%3"
            + "A%2F%2Fexample.com/x",
        correction: .high,
        version: 10,
        mask: 2,
        penalties: [2510, 2420, 2054, 2235, 2409, 2228, 2107, 2489],
        symbols: [
            2: """
            fecf818cb5ff3f8
            82afe9762101208
            baded7d197ff2e8
            ba1adf0f4a752e8
            ba4acabed7f92e8
            82a66fe3d11e208
            feaaaaaaaaaabf8
            00bf5a23aea5800
            3af9edbf7b79738
            48ac2a2a9e6cc68
            6a9736dc8139b30
            31fd533d99ed8a0
            4f1b9db5fc33250
            54d7a941147d908
            1f458518bffba20
            28a72e1c79bc170
            dab7d9c984072c8
            51833107d4f0d88
            46f846c5b6b60b0
            a4930d2e69d9ce0
            7e521bf01671410
            300c57b36db9c48
            b31721751a83a90
            edd3429a10248c0
            f27969e7db72020
            69a41ad2703dd70
            6fff6cbe077bfa0
            68ce2c63ff2d8f0
            6afa28ab8157a80
            e8ea75a2b961898
            cfb5493ee7cffb0
            9d169406accd630
            779350ad4b52990
            157c1266cc68848
            cec408ccf21cdd0
            2cec9ef910ca370
            f7d753e91407858
            9cdc85e7a879478
            63572442145f8e0
            0deea07620b34b8
            071daf363d06c80
            71052f87b8f2158
            dae474111d25dd0
            253d083c9fcfe70
            0767bcca0a565c0
            357b5db7277d868
            a600639b1846db0
            f9eabfa7d7e92e0
            0211547edb00fc0
            00c001e3c6348b8
            fe30fc2b8886af0
            821c4ea22fc98f0
            baa6a8bf2d54f90
            ba9d96d56170ea0
            bae737fc9f57e60
            827418bda34dd20
            fe0533d98085bf0
            """,
            6: """
            fe795ae103273f8
            8268f507e61d208
            bafa4598b36f2e8
            baf95137a9f92e8
            ba5883be45b12e8
            8257a8e3a0da208
            feaaaaaaaaaabf8
            0078466269b9800
            1b5d7ffe5feb060
            704fa4127de2fe0
            4e057ff81370978
            2d8c9421e82a960
            22ad46d84ae8488
            2510b530d361e10
            566117519b69eb0
            1044a0249a322f8
            fe2590ed164e080
            4df2f61ba537c48
            2b4e9da8006d668
            d554115faec5bf8
            377689b932e3080
            08efd98b8e37fc0
            9785685188ca8d8
            f1a2858661e3900
            9fcfb28a6da96f8
            186306a3b721a68
            2fdbfeff23e9fb0
            58ada2631ca38f8
            4ae861ab131eac8
            f89bb2a2c8a68d8
            af83927f5114fe8
            ecd188776bd1128
            3eb7c2e46fc0d00
            2d9f9c5e2fe6bc0
            ea5641e86055f98
            309d59e5610d2b0
            9a618884a2dce80
            ed1b99966f65360
            2a73b60b30cdc70
            350d2e4ec33d730
            238fe612af4fec8
            6d74e89bc935098
            b752af7cabfeb08
            54fa144d58d3968
            4e432e832ec4150
            0d98d38fc4f3be0
            a6922abf8a0fff8
            f99b78bba62e320
            03a78f3f6ddbf98
            00871da201288a0
            fe946e6aac14ae0
            827fc0a2cc478f8
            bab4e1bfbf1dfd8
            baec51c910b7f60
            ba51ec91298c8b8
            823304cc6451a38
            fe21a190a417f60
            """,
        ]
    )

    /// 145 bytes at L: version 7, mask 2.
    static let url145L = Fixture(
        text: "https://preflight.example.com/activate?device=settop-livingroom-01&code=ABC1234&"
            + "requestor=REF30&redirect=https%3A%2F%2Fexample.com%2Fdone&lang=en",
        correction: .low,
        version: 7,
        mask: 2,
        penalties: [1869, 1673, 1283, 1645, 1336, 1343, 1344, 1670],
        symbols: [
            2: """
            fe5893530bf8
            82dfdfa1d208
            ba66988fd2e8
            bacdefb31ae8
            ba2a1fc63ae8
            82d8c8848208
            feaaaaaaabf8
            006518dc9800
            fbf16fc50550
            309d084f9c38
            e2f5ece9a210
            6cf0d1ded0e0
            e785e7b36210
            4cfa555f08b8
            b797eba5eeb0
            918a71caede8
            aab7afb74250
            bd9812478df8
            46742ba06b70
            d09410d39fe0
            2f91efc21fd0
            d8ef18de18a8
            cae87af56ac0
            088d08bac8a0
            3f89ffc51fd0
            51541b569c38
            37064a25e570
            b9b4c3ab9460
            9334f1154ec8
            6c490ec38818
            5f9f44207500
            792b358ebb38
            afbee4e20880
            f1a91ec71268
            0b58c3312cf0
            798c499ef170
            9bd4ffd70f80
            00e918c318d8
            fed03ab53ac0
            822ce8d8d8a8
            bac9efc74f80
            ba94159e0af0
            bac1d765fc68
            82f2eb72dce0
            fe8db1c57ad0
            """
        ]
    )

    /// 310 bytes at M: version 13, mask 2.
    /// (qrcode's own choice is mask 5, scoring with the format information left light.)
    static let text310 = Fixture(
        text: "Preflight technician sign-in. Open https://sp.auth.adobe.com/api/v2/authenticate"
            + "/REF30/ABC1234 on a phone, sign in with the TV provider account of the household"
            + ", then return to the set-top box: it polls for the authorization and shows 'auth"
            + "orized' within a minute. Device settop-livingroom-01, requestor REF30.",
        correction: .medium,
        version: 13,
        mask: 2,
        penalties: [3785, 3396, 3025, 3614, 3144, 3117, 3058, 3638],
        symbols: [
            2: """
            fe2ead3525ed963bf8
            825b4915fb00bc4208
            ba9fc24da3dd7862e8
            bad5ed1f4973e30ae8
            bab96bd0fdf8cf2ae8
            82b3eae68b1f916208
            feaaaaaaaaaaaaabf8
            00946cb78dab0ab000
            be5f8d7af8739363e0
            90038d802129ced9e8
            e75ed0fcfb67d1e2a0
            449b4ef853ad788ce0
            a2d1cddf7c31925410
            d98ff9c5b4ec861cd8
            62e3e8c8bad32176f0
            3148347319ac1f75e0
            b698c39e2c45910500
            c1c01380e0e0ce1c28
            eab4c20cdc12307210
            24d1934d0f290bbdf8
            c660d47e7ab1812410
            fcc3aec4c1e8971c68
            af45d628ba9eb32b90
            fc51bd77118d1a99f0
            4b2570de6c62930670
            bdea14e125ed57c878
            275c7b94be1ee477b0
            6570300749e01af0e0
            163fdd5b6c7d960648
            30081e350068869d58
            c66cc5bc8a5fa4ab00
            14f6f04919a83e97f0
            cffec934f805911fc0
            48a1256b8d21d318d8
            cabfd3dbaa06353a90
            88b5110b8e9afea8a0
            0fb9d0fefa77223f80
            b594fd51207a561a68
            f66d4322625d20a9b0
            51a967d71ccf1c1b60
            b7f289de1c31c54080
            71bb6984a069c6c058
            f2029af43a17806c70
            b564be922ddd48d370
            ef8459aa1f179640c0
            c539a3a0e9c1de0818
            9ff436e752a6c449f0
            b996e87b9fbc1db2f0
            5afd8d0b5357852990
            81c1eda19c7cce0808
            2e752836b29b74ace0
            d97e9fd7ffdc6892e8
            4a64a3db4a47e62d90
            8c3a7a41ee78ce8868
            26c5c7720187a07570
            ec4e6c30fe4a5ed270
            57e1e5ae4d46f72dc8
            e1ee9961ac74560c28
            afd383f43317a32530
            801efb10b8ec9fb7e0
            9b7bed8af835e32fc8
            00ba47a18c705618e8
            fe328963ab86a80ab0
            82ec2c8389f67f88e0
            ba98541af825a64fc0
            ba87f4240df19605e0
            ba95f0826fc69cea20
            8214dcc7a0ba6ac560
            fec2a4433c33b52310
            """,
            5: """
            fe1876589336fbbbf8
            829a4d05ba04ac0208
            ba9fc24da3dd7862e8
            bab66327aafddbcae8
            ba396bd0fdf8cf2ae8
            8272eef68a1b812208
            feaaaaaaaaaaaaabf8
            00d568a78caf1af000
            82df8d7af873936670
            a8e003b8c2a7f63a60
            e75ed0fcfb67d1e2a0
            54da4ae812a968cde0
            cf6716b2caeaffe2c8
            c9cefdd5f5e8965dd8
            62e3e8c8bad32176f0
            09abba4bfa22279668
            b698c39e2c45910500
            d1811790a1e4de5d28
            870219616ac95dc4c8
            3490975d4e2d1bfcf8
            c660d47e7ab1812410
            c42020fc2266afffe0
            af45d628ba9eb32b90
            ec10b96750890ad8f0
            2693abb3dab9feb0a8
            adab10f164e9478978
            275c7b94be1ee477b0
            5d93be3faa6e221368
            163fdd5b6c7d960648
            20491a25416c96dc58
            abda1ed13c84c91dd8
            04b7f45958ac2ed6f0
            cffec934f805911fc0
            78c2ab538eafebf8d0
            cabfd3dbaa06353a90
            98f4151b8f9eeee8a0
            6f8f0b93fcac4f8fd8
            a5d5f941617e465b68
            f66d4322625d20a9b0
            694ae9efff4124f8e8
            b7f289de1c31c54080
            61fa6d94e16dd68158
            9fb441998ccceddaa8
            a525ba826cd9589270
            ef8459aa1f179640c0
            fdda2d980a4fe6eb90
            9ff436e752a6c449f0
            a9d7ec6bdeb80df3f0
            374b5666e58ce89f48
            9180e9b1dd78de4908
            2e752836b29b74ace0
            e19d11ef1c52507160
            4a64a3db4a47e62d90
            9c7b7e51af7cdec968
            4b731c1fb75ccdc3a8
            fc0f6820bf4e4e9370
            57e1e5ae4d46f72dc8
            d90d17594ffa6eefa0
            afd383f43317a32530
            805fff00f9e88ff6e0
            9acd36e7feee8e9f90
            00fb43b18d744658e8
            fe328963ab86a80ab0
            820fa2bb8a784768e8
            ba18541af825a64fc0
            ba46f0344cf58644e0
            ba232befd91df15cf8
            8255d8d7e1be7a8460
            fec2a4433c33b52310
            """,
        ]
    )

    /// 31 bytes at M: version 3, mask 2.
    static let utf8 = Fixture(
        text: "Grüße aus Zürich, 東京 ✓",
        correction: .medium,
        version: 3,
        mask: 2,
        penalties: [729, 769, 580, 701, 860, 739, 684, 827],
        symbols: [
            2: """
            fe61c3f8
            82581208
            bab2dae8
            ba90e2e8
            ba9f1ae8
            828fb208
            feaaabf8
            00954000
            be4b43e0
            8c39b1e8
            f3d80698
            9d9aeee8
            9ec0f210
            a5475490
            7b0fe568
            3ced62b8
            e2a37750
            9869fbe8
            8a800be0
            b01ab5c8
            b2686fa0
            00cf28d0
            fe47bac0
            82847888
            bad3cfa8
            bad13100
            bafe6b90
            8253edd0
            fe84b6a0
            """
        ]
    )

    static let all = [a, signInURL, url100, url100Q, url100H, url145L, text310, utf8]
}
