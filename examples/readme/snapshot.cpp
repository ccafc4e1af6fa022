// examples/readme/snapshot.cpp: save a live reactor to a file, restore it in another process.
//   snapshot save FILE       spawn an account, deposit twice, save it to FILE
//   snapshot restore FILE    (a new process) bring the account back and ask its balance
#include <reheap/runtime.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

struct Deposit { long cents; };
struct Balance { long cents; };

class Account : public reheap::Reactor {
 public:
  Account() { handle<&Account::on_deposit>(); handle<&Account::on_balance>(); }
  void on_deposit(const Deposit& d) { deposits_.push_back(d.cents); }
  void on_balance(const Balance&) {
    long sum = 0;
    for (long cents : deposits_) sum += cents;
    send(sender(), Balance{sum});
  }

 private:
  std::vector<long> deposits_;                 // in the reactor's heap, so in its snapshot
};

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string mode = argv[1];
  reheap::Runtime runtime;
  reheap::ActorRef account;
  if (mode == "save") {
    account = runtime.spawn<Account>();
    runtime.send(account, Deposit{500});
    runtime.send(account, Deposit{250});
    runtime.snapshot(account, argv[2]);        // between two events, after both deposits
  } else {
    account = runtime.restore(argv[2]);        // the same ActorRef, heap and addresses
  }
  std::optional<Balance> balance = runtime.ask<Balance>(account, Balance{});
  std::printf("%s: %ld cents\n", mode.c_str(), balance ? balance->cents : -1);
  return balance && balance->cents == 750 ? 0 : 1;
}
